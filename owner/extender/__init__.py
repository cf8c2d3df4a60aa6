"""The scheduler extender (kube-scheduler's filter/bind/preempt), run inside the cache owner.

`core.Extender` answers the extender API's JSON; `statuses.PodScheduleStatuses`
keeps what it decided per pod (as HiveD does); `bindsender.BindSender` publishes
its binds off the owner's thread. No Django in those: kube-scheduler reaches them
on the owner's own listener (`listener.py`, handing calls to the owner's thread
through `owner_calls.py`), or through the web's views (`views.py`, listed in the
REST schema by `api.py`), which forward over the command channel
(`handlers.command_handlers`); both answer by `answers.py`. The statuses page (`pages.py`, live by
`consumer.py`) and REST read the statuses through `status_reads.py`. Where there is
no kube-scheduler (the embedded default), `standin.py` calls the extender as it would.
"""
from .core import Extender, ExtenderUserError
from .statuses import (BIND_INFO_ANNOTATION, PodScheduleStatus, PodScheduleStatuses,
                       TransitionError, Victim, bind_info_annotation)

__all__ = ["BIND_INFO_ANNOTATION", "Extender", "ExtenderUserError", "PodScheduleStatus",
           "PodScheduleStatuses", "TransitionError", "Victim", "bind_info_annotation"]
