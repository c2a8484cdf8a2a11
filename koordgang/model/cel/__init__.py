"""CEL device selectors of Dynamic Resource Allocation, evaluated as Kubernetes evaluates them:
:func:`compile_selector` once per expression, :func:`device_facts` once per device, then
:meth:`Selector.matches`. What is supported, why cel-expr-python, and what stands in for what it
cannot do: docs/decisions/cel.md."""

from koordgang.model.cel.errors import CelCompileError, CelError, CelRuntimeError
from koordgang.model.cel.selector import DeviceFacts, Selector, compile_selector, device_facts

__all__ = [
    "CelCompileError",
    "CelError",
    "CelRuntimeError",
    "DeviceFacts",
    "Selector",
    "compile_selector",
    "device_facts",
]
