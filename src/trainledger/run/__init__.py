"""The training host: callback protocol, Model, RecModel, metrics. Depends on nothing else in
the package."""
