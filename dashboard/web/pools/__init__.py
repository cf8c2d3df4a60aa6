"""The warm pools' web side: the panel, its live consumer and the claims REST router."""
