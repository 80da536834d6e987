"""ksgitops: KubeStellar's multi-cluster configuration management, done the GitOps way."""

__version__ = "0.1.0"
