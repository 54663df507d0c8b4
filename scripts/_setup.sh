# Sourced by scripts/demo and scripts/test: create .venv if missing and install tausim with its dev tools and the
# PostgreSQL driver (the store tests also run against PostgreSQL where TAUSIM_TEST_STORE_URL is set).
# Re-installs only when pyproject.toml changed since the last install.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $($PY --version 2>&1)" >&2
  "$PY" -m venv .venv
fi
stamp=".venv/.tausim-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || ! .venv/bin/python -c "import simulator, xdist, litellm, distributed, agents, langgraph, mcp, a2a.client, gymnasium, rank_bm25" 2>/dev/null; then
  echo "installing tausim and its dependencies into .venv" >&2
  .venv/bin/python -m pip install --quiet --upgrade pip >&2
  .venv/bin/python -m pip install --quiet -e ".[dev,postgres,dask,otel,openai-agents,langgraph,mcp,a2a,gym,knowledge]" >&2
  echo "$want" > "$stamp"
fi
export LITELLM_LOCAL_MODEL_COST_MAP=True
export PATH="$ROOT/.venv/bin:$PATH"
