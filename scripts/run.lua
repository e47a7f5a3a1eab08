-- scripts/run: say where the server listens once it has started (one short line, so that no
-- hit-enter prompt appears).
vim.api.nvim_create_autocmd("User", {
  pattern = "PiIdeStarted",
  once = true,
  callback = function(ev)
    vim.notify(("pi-ide.nvim: port %d · lockfile %s · /ide in Pi"):format(ev.data.port, ev.data.lockfile))
  end,
})
