"""Tools from plain Python: schemas from signatures, validated calls, safe name spaces, a Python sandbox."""

from chainform.tools._namespace import Namespace, call, namespace
from chainform.tools._python import PythonTool, python
from chainform.tools._schema import get_schema
from chainform.tools._tool import Tool, Toolbox

__all__ = ["Namespace", "PythonTool", "Tool", "Toolbox", "call", "get_schema", "namespace", "python"]
