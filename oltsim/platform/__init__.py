"""oltsim-platform: the platform update procedures of the service document (sections 4.3, 5 and 9) as a tool.

`classify` applies the rules of section 9.2, `plan` prints the runbooks of 9.3 to 9.9, `app-update` performs the
controller-app update of 9.4 with verification and automatic rollback, `agent-update` applies the OLT-agent minor
update of 9.9 to oltsim itself. Rules, component tables and runbooks are data (`catalog`, `classify`, `plan`); I/O
happens only in `appupdate`, `agentupdate` and `cli`.
"""
