-- scripts/run: say where the server listens once it has started (one short line, so that no
-- hit-enter prompt appears in an 80-column terminal; :PiIde status has the lockfile).
vim.api.nvim_create_autocmd("User", {
  pattern = "PiIdeStarted",
  once = true,
  callback = function(ev)
    vim.notify(("pi-ide.nvim: listening on port %d · /ide in Pi"):format(ev.data.port))
  end,
})
