"""Engine knowledge tables (argument names, log dialects), one module per engine."""
