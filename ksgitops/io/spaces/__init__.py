"""The space framework's edge: space providers, the space manager that applies a core plan, and the
space-aware client (docs/SPACES.md).

Providers share one small interface (`Provider`: create, delete, list, get, watch, plus `client`):

- `GitFolderProvider(root)`: a space is `spaces/<name>/` of a work tree. `create` makes the folder
  with a `space.yaml` holding a managed Space (the managed marker, as every mailbox has); `delete`
  removes the folder; every folder is Ready.
- `KubeconfigProvider(path)`: a space is a context of a kubeconfig file. Clusters are provisioned
  outside ksgitops, so `create` and `delete` raise `NotSupported`; spaces are discovered
  (SpacePrefixForDiscovery) or imported. With `probe` (the default) a context whose API server does
  not answer is NotReady.

base.py holds the interfaces; gitfolders.py and kubeconfig.py the providers; stores.py where Space
objects live; manager.py the manager; client.py the space-aware client.

`SpaceManager(providers, store)` plans with `ksgitops.core.place.spaces.plan` and applies the actions.
`SpaceClients(providers)` gives a client per space name and lists / watches across spaces; each
object it returns carries the annotation `space.kubestellar.io/space-name: <space>`.

The `kubernetes` package is imported lazily, here only: the core never sees it.
"""
from __future__ import annotations

from .base import ADDED, DELETED, MODIFIED, NotSupported, ObjectEvent, Provider, ProviderError, SpaceEvent, describe
from .client import SpaceClients, annotate, providers_from, space_client
from .gitfolders import GitFolderProvider, GitSpaceClient
from .kubeconfig import KubeSpaceClient, KubeconfigProvider, selector_string
from .manager import Applied, SpaceManager
from .stores import RepoSpaceStore, SourceSpace, SpaceStore

__all__ = ["Provider", "GitFolderProvider", "KubeconfigProvider", "GitSpaceClient", "KubeSpaceClient",
           "SpaceManager", "SpaceStore", "RepoSpaceStore", "SourceSpace", "Applied", "SpaceClients", "space_client",
           "SpaceEvent", "ObjectEvent", "ProviderError", "NotSupported", "annotate", "selector_string",
           "providers_from", "describe", "ADDED", "MODIFIED", "DELETED"]
