"""One router per API resource, plus the control plane."""
