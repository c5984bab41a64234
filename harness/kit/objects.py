"""Objects a test creates, each deletion registered at creation and run newest first when the
test ends, pass or fail: upstream e2e's builder `Create` registering `ginkgo.DeferCleanup`
(kubernetes test/e2e/dra/utils/builder.go), so test bodies need no `finally:`."""

from __future__ import annotations

from collections.abc import Callable

from harness.kit.kube import Kube, Obj


class Cleanup:
    """Undo steps, run newest first."""

    def __init__(self) -> None:
        self._undo: list[tuple[str, Callable[[], object]]] = []

    def defer(self, what: str, undo: Callable[[], object]) -> None:
        """Any other undo step (a kubectl delete, stopping a process), run in the same LIFO order."""
        self._undo.append((what, undo))

    def cleanup(self) -> None:
        """Every step runs even when one fails; the first failure is raised after the rest."""
        errors: list[Exception] = []
        while self._undo:
            what, undo = self._undo.pop()
            try:
                undo()
            except Exception as err:  # the remaining steps still run
                err.add_note(f"while cleaning up: {what}")
                errors.append(err)
        if errors:
            raise errors[0]


class Created(Cleanup):
    def __init__(self, kube: Kube) -> None:
        super().__init__()
        self.kube = kube

    def create(self, body: Obj) -> Obj:
        """`Kube.create`, and the object's deletion registered (also if the test fails)."""
        created = self.kube.create(body)
        meta = created["metadata"]
        api, kind, name, ns = created["apiVersion"], created["kind"], meta["name"], meta.get("namespace")
        self.defer(f"delete {kind} {name}", lambda: self.kube.delete(api, kind, name, ns))
        return created
