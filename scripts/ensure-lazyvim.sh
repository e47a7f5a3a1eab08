# Sourced by scripts/test: makes sure the LazyVim profile the real-setup tests run in is installed
# in .deps/ (project local, from PyPI's nvim-zsh-profile: a LazyVim config with its plugins
# vendored as a lazy.nvim root) and exports PI_IDE_LAZYVIM with its assets folder.
lazyvim_dir="$root/.deps/lazyvim"
lazyvim_assets="$lazyvim_dir/nvim_zsh_profile/assets"
if [ ! -f "$lazyvim_assets/nvim/init.lua" ]; then
  echo "pi-ide.nvim: installing the LazyVim profile into .deps/lazyvim (once)..." >&2
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$lazyvim_dir" "nvim-zsh-profile==0.1.0" >&2 \
    || { echo "pi-ide.nvim: could not install nvim-zsh-profile with pip" >&2; exit 1; }
fi
export PI_IDE_LAZYVIM="$lazyvim_assets"
