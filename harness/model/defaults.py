"""Defaults of model requests, in a module of their own so that the run config
(`cursorbench.config`) reads them without importing the model client and `openai`."""

DEFAULT_REQUEST_TIMEOUT_S = 300.0  # one try of one request; see the README for why 300
