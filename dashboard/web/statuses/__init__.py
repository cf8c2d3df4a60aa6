"""The extender's statuses page, its live consumer and the reads behind them and REST."""
