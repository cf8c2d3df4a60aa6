"""The scheduler extender (kube-scheduler's filter/bind/preempt), run inside the cache owner.

`core.Extender` answers the extender API's JSON; `statuses.PodScheduleStatuses`
keeps what it decided per pod (HiveD's seed). No Django here: the HTTP views
forward to the owner over the command channel (`handlers.command_handlers`).
"""
from .core import Extender, ExtenderUserError
from .statuses import (BIND_INFO_ANNOTATION, PodScheduleStatus, PodScheduleStatuses,
                       TransitionError, Victim, bind_info_annotation)

__all__ = ["BIND_INFO_ANNOTATION", "Extender", "ExtenderUserError", "PodScheduleStatus",
           "PodScheduleStatuses", "TransitionError", "Victim", "bind_info_annotation"]
