"""`python tests/kubeserver --kubeconfig FILE [--controllers]`: one KubeServer in a process of its own."""
import sys
from pathlib import Path

# tests/, not this folder, on the path: the package and tests/kubecontrollers.py import from there
sys.path[0] = str(Path(__file__).resolve().parents[1])

from kubeserver import main  # noqa: E402

main()
