"""kube-scheduler's extender (filter, bind, preempt), run inside the cache owner.

`core.Extender` decides on the owner's cache and answers the extender API's JSON, read
and built by `requests.py` (a filter's body decoded by `filter_args.py`);
`statuses.PodScheduleStatuses` keeps what it decided per pod (as HiveD does). The
listener (`listener.py` on cheroot, `listener_app.py`, `listener_tls.py`) hands each
call to the owner's thread through `owner_calls.py`, and `answers.py` turns the result
into the answer (a bind's Binding posted in the listener's thread). `handlers.py` names
the verbs and the statuses commands the web asks for; `bindsender.BindSender` queues
the binds nobody waits for, off the owner's thread. No Django here.
"""
from .core import Extender
from .requests import ExtenderUserError
from .statuses import PodScheduleStatus, PodScheduleStatuses, TransitionError, Victim

__all__ = ["Extender", "ExtenderUserError", "PodScheduleStatus", "PodScheduleStatuses",
           "TransitionError", "Victim"]
