-- Building the Rust core: synchronously for lazy.nvim's build step (build.lua at the root),
-- in the background for :PiIde build. A library Neovim has loaded is never replaced in place
-- (cargo writes a new file and renames it over the old name; the running one stays mapped):
-- after a rebuild, a restart loads the new one.
local M = {}

M.root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h:h")
M.command = { "cargo", "build", "--release" }

local function tail(text, n)
  local lines = vim.split(vim.trim(text or ""), "\n", { plain = true })
  return table.concat(vim.list_slice(lines, math.max(1, #lines - n + 1), #lines), "\n")
end

local function no_cargo()
  return "cargo was not found on PATH: install a Rust toolchain (https://rustup.rs), then build again"
end

--- Builds and waits; raises a readable error on failure (what lazy.nvim shows).
function M.sync()
  if vim.fn.executable("cargo") ~= 1 then
    error("pi-ide.nvim: " .. no_cargo(), 0)
  end
  local r = vim.system(M.command, { cwd = M.root, text = true }):wait()
  if r.code ~= 0 then
    error(("pi-ide.nvim: `cargo build --release` failed in %s:\n%s"):format(M.root, tail(r.stderr, 25)), 0)
  end
  return true
end

local running

--- Builds in the background with progress notifications. `on_done(ok)` runs on the main loop.
function M.async(on_done)
  local log = require("pi-ide.log")
  if running then
    vim.notify("pi-ide.nvim: a build is already running", vim.log.levels.INFO)
    return
  end
  if vim.fn.executable("cargo") ~= 1 then
    log.notify(no_cargo(), vim.log.levels.ERROR)
    return
  end
  vim.notify("pi-ide.nvim: building the core (cargo build --release)…", vim.log.levels.INFO)
  local last_progress, stderr = 0, {}
  running = vim.system(M.command, {
    cwd = M.root,
    text = true,
    stderr = function(_, data)
      if not data then
        return
      end
      table.insert(stderr, data)
      local crate = data:match("Compiling ([%w_%-]+)")
      local now = vim.uv.now()
      if crate and now - last_progress > 1000 then
        last_progress = now
        vim.schedule(function()
          vim.notify(("pi-ide.nvim: building… (compiling %s)"):format(crate), vim.log.levels.INFO)
        end)
      end
    end,
  }, function(r)
    vim.schedule(function()
      running = nil
      if r.code ~= 0 then
        log.notify(("`cargo build --release` failed:\n%s"):format(tail(table.concat(stderr), 15)), vim.log.levels.ERROR)
      elseif require("pi-ide.native").get() then
        vim.notify(
          "pi-ide.nvim: built. Restart Neovim to use it (a loaded library is never replaced in place).",
          vim.log.levels.INFO
        )
      else
        vim.notify("pi-ide.nvim: built.", vim.log.levels.INFO)
      end
      if on_done then
        on_done(r.code == 0)
      end
    end)
  end)
end

return M
