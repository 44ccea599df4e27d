"""The text people read in a capture: one line for each annotation's model event (`annotation_text`) and the
summary of an OMCI message in its packet's comment (`omci_summary`)."""
from __future__ import annotations

from oltsim.model import events
from oltsim.omci import codec


def omci_summary(message: bytes) -> str:
    """`omci=<message type> me=<class>/<instance> tid=<transaction id>` of an OMCI message (what omci.lua shows),
    or "" when it is too short."""
    if len(message) < 8:
        return ""
    tid = int.from_bytes(message[0:2], "big")
    mtype = message[2]
    action = codec.ACTION_NAMES.get(mtype & 0x1F, f"type-{mtype & 0x1F}")
    if mtype & 0x20:
        action += "-response"
    me_class = int.from_bytes(message[4:6], "big")
    me_id = int.from_bytes(message[6:8], "big")
    me = codec.ME_CLASSES.get(me_class)
    name = f"{me.name}({me_class})" if me is not None else str(me_class)
    ext = " extended" if message[3] == 0x0B else ""
    return f"omci={action}{ext} me={name}/{me_id} tid={tid:#06x}"


def annotation_text(event) -> str:
    """One line saying what an annotation's model event was, for people."""
    kind = event.__class__
    if kind is events.StateChanged:
        where = {"olt": "OLT", "nni": f"NNI {event.pon_id}" if event.pon_id >= 0 else "NNI",
                 "pon": f"PON {event.pon_id}", "onu": f"ONU {event.serial}",
                 "uni": f"ONU {event.serial} UNI {event.uni_id}"}.get(event.device, event.device)
        return f"{where} {event.attribute}: {event.src} -> {event.dest}"
    if kind is events.Alarm:
        fields = " ".join(f"{k}={v}" for k, v in event.fields.items())
        return f"alarm {event.kind}{' ' + event.serial if event.serial else ''} {fields}".rstrip()
    if kind is events.AlarmCleared:
        return f"alarm {event.kind} cleared{' ' + event.serial if event.serial else ''} ({event.reason})"
    if kind is events.OmciAlarm:
        state = "raised" if event.raised else "cleared"
        return f"ONU {event.serial} OMCI alarm LOS {state} on ME {event.me_class}/{event.me_id}"
    if kind is events.ScenarioEvent:
        text = f"{event.kind} {event.scenario}"
        if event.step:
            text += f" step {event.step!r}"
        if event.action:
            text += f" ({event.action})"
        if event.targets:
            shown = ", ".join(event.targets[:8]) + (f" and {len(event.targets) - 8} more"
                                                   if len(event.targets) > 8 else "")
            text += f" targets {shown}"
        if event.outcome:
            text += f": {event.outcome}"
        return text
    if kind is events.OnuDiscovery:
        return f"OnuDiscInd: ONU {event.serial} discovered on PON {event.intf_id}"
    if kind is events.OnuIndication:
        return (f"OnuInd: ONU {event.serial} (PON {event.intf_id}, ONU id {event.onu_id}) "
                f"oper {event.oper_state} admin {event.admin_state}")
    if kind is events.OltIndication:
        return f"OltInd: OLT {event.oper_state}"
    if kind is events.FlowChanged:
        return (f"flow {event.flow_id} {event.flow_type} {'added' if event.added else 'removed'} "
                f"(PON {event.pon_id}, ONU id {event.onu_id})")
    if kind is events.OpenoltRequest:
        target = f" for ONU {event.serial}" if event.serial else ""
        return f"the adapter called {event.rpc}{target}"
    if kind is events.MibUpload:
        return f"ONU {event.serial} MIB upload {'ended' if event.done else 'started'}"
    return repr(event)
