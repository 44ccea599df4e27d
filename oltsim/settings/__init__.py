"""What oltsim.config builds its Settings with: the errors and warnings a configuration gives (errors), one row of
the table of settings (row), strict YAML (yamlfile), values read from text (values), the checks of a setting
(checks), the services and PON ranges files (services, ponranges), the access token (token), a BBSim-style config
file (bbsimfile) and the loading of Settings from a table: defaults < file < options given (loading).

Pure, as oltsim.config is: files read and frozen values built, nothing else. None of these imports oltsim.config;
callers import from oltsim.config, which re-exports the names they use.
"""
