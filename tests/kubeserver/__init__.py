"""A small in-memory Kubernetes API server on loopback, for tests.

It speaks enough of the Kubernetes REST protocol (discovery, CRUD, patches including server-side
apply, the /status subresource, watch) that the real `kubernetes` client works against it
unchanged. The layers, top to bottom, one module each:

- `resources`: `ResourceType` and `Registry`, what is served (built-ins plus CRD-defined types)
  and the discovery documents describing it; `errors`: `ApiError` and the Status it answers with.
- Pure helpers: label/field selectors (`selection`), merge and JSON patches (`patches`), field
  paths for managedFields (`managedfields`), what the server checks in what it is sent
  (`validation`).
- `store`: `Store`, objects, resourceVersions, generation, managedFields, finalizers and the event
  log that watches read; one lock guards everything.
- `rest`: `Api`, REST routing, (method, path, query, headers, body) -> (code, document or event stream).
- `server`: `KubeServer`, HTTP plumbing, kubeconfig, test knobs and the Python-side handle for tests.

Not supported: authentication/authorization (any token works), protobuf and Table output,
aggregated discovery (the plain format is always served, clients fall back to it), admission
(but NamespaceLifecycle), validation against OpenAPI schemas, defaulting, graceful deletion and
propagation policies, bookmarks, watch of a single object by URL (use
fieldSelector=metadata.name=...), and lists inside server-side apply are atomic.

Controllers: none by default (nothing sets a Deployment's status unless a test does, and deleting
a Namespace removes it and its contents at once). `KubeServer(controllers=True)` runs stand-ins of
a real cluster's (tests/kubecontrollers.py): workloads get ReplicaSets, Pods and a status a moment
after each change, and a deleted Namespace stays Terminating until they have emptied it, as on a
real cluster. `python tests/kubeserver --kubeconfig FILE [--controllers]` serves one in a
process of its own (see `main`).
"""
from __future__ import annotations

from .errors import ApiError
from .resources import ResourceType
from .server import KubeServer, LoggedRequest, main, take_request, write_chunk
from .store import Store

__all__ = ["ApiError", "KubeServer", "LoggedRequest", "ResourceType", "Store", "main", "take_request", "write_chunk"]
