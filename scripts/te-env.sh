# Sourced by the scripts that run Transformer Engine's own code (te-conformance.sh,
# te-explore.sh): installs what they need under build/ and finds TE's sources.
#
#   te_env_install                       # build/te-venv: torch and the pure-Python packages TE imports
#   te_source_of VERSION DIR             # prints DIR if given, else the unpacked wheel VERSION
#
# Everything goes under build/: the virtual environment build/te-venv (pinned) and the
# unpacked wheels build/te-src/V. No system Python package is touched.

source "$(dirname "${BASH_SOURCE[0]}")/pip-install-package.sh"

readonly TE_VERSION_PINNED=2.20.2
readonly TE_PYTHON_PACKAGES=(torch==2.15.0 numpy==2.4.6 pydantic==2.14.4 packaging==26.4 einops==0.8.2
                             onnx==1.23.2 onnxscript==0.7.2)
# PyPI's torch brings the CUDA libraries (and TE imports triton), 5.5 GB installed, even to run
# on the CPU: a clear refusal beats pip's "No space left on device" halfway through.
readonly TE_INSTALL_NEEDS_GB=7   # with room for pip's downloads and unpacking
readonly TE_VENV=build/te-venv

te_env_install() {
  local stamp="$TE_VENV/.installed"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${TE_PYTHON_PACKAGES[*]}" ]; then return 0; fi
  mkdir -p build
  local free_gb
  free_gb=$(df --output=avail -BG build | tail -1 | tr -dc 0-9)
  if [ "$free_gb" -lt "$TE_INSTALL_NEEDS_GB" ]; then
    echo "the environment needs about ${TE_INSTALL_NEEDS_GB} GB free under build/, there are ${free_gb} GB" >&2
    return 2
  fi
  echo "installing ${TE_PYTHON_PACKAGES[*]} into $TE_VENV" >&2
  rm -rf "$TE_VENV"
  python3 -m venv "$TE_VENV"
  # No cache: pip would keep a second copy of every wheel (gigabytes) that nothing reads again.
  "$TE_VENV/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir "${TE_PYTHON_PACKAGES[@]}"
  echo "${TE_PYTHON_PACKAGES[*]}" > "$stamp"
}

# TE's sources: DIR when given, else the wheel VERSION from PyPI, unpacked once.
te_source_of() {
  local version="$1" source="$2"
  if [ -n "$source" ]; then echo "$source"; return 0; fi
  source="build/te-src/$version"
  if [ ! -f "$source/transformer_engine/pytorch/quantization.py" ]; then
    local wheels="build/te-wheels"
    mkdir -p "$wheels"
    "$TE_VENV/bin/pip" download --quiet --disable-pip-version-check --no-cache-dir --no-deps --dest "$wheels" \
      "transformer-engine==$version" >&2
    rm -rf "$source"
    "$TE_VENV/bin/python" -m zipfile -e "$wheels/transformer_engine-$version-py3-none-any.whl" "$source"
  fi
  echo "$source"
}

# The package fp8sm (pip install .) in the environment, for `--plugin`: fp8sm's TE plugin runs
# in the same Python as TE. pip builds it once (incremental after, pyproject.toml's build-dir),
# and installs it again only when the files the wheel is built from changed since: an install
# with nothing to rebuild still takes pip some 14 s, and CI runs six stages that install it. The
# install's own settings (scripts/pip-install-package.sh) count as a source: a change to them alone
# installs it again.
readonly TE_PLUGIN_SOURCES=(pyproject.toml README.md CMakeLists.txt cmake spec statemachine driver interpreter
                            explorer python scripts/pip-install-package.sh)

te_plugin_install() {
  local stamp="$TE_VENV/.fp8sm-installed-from" digest
  digest=$(tar --create --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
             --exclude=__pycache__ "${TE_PLUGIN_SOURCES[@]}" | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then return 0; fi
  rm -f "$stamp"
  fp8sm_pip_install "$TE_VENV/bin/pip" >&2
  echo "$digest" > "$stamp"
}
