-- Cheap registrations only: the command, and a deferred start. Nothing is loaded until used.
if vim.g.loaded_pi_ide then
  return
end
vim.g.loaded_pi_ide = 1

if vim.fn.has("nvim-0.10") ~= 1 then
  vim.notify("pi-ide.nvim needs Neovim 0.10 or newer", vim.log.levels.ERROR)
  return
end

-- The wiring first: which module plays each part core calls (paths only, it loads nothing).
local function commands()
  require("pi-ide.wiring")
  return require("pi-ide.core.commands")
end

vim.api.nvim_create_user_command("PiIde", function(opts)
  commands().run(opts)
end, {
  nargs = "*",
  range = true,
  bang = true,
  desc = "pi-ide.nvim: status, start, stop, open, close, send, add",
  complete = function(arglead, cmdline)
    return commands().complete(arglead, cmdline)
  end,
})

-- Visual mode: mention the selected lines to the agent (map it, e.g. to <leader>as).
vim.keymap.set("x", "<Plug>(PiIdeSend)", ":PiIde send<CR>", { silent = true, desc = "pi-ide: send selection" })
vim.keymap.set("n", "<Plug>(PiIdeSend)", "<Cmd>PiIde send<CR>", { silent = true, desc = "pi-ide: send file" })
-- In a file explorer: the entry under the cursor (Normal) or the selected ones (Visual);
-- elsewhere the current file.
vim.keymap.set("x", "<Plug>(PiIdeAdd)", ":PiIde add<CR>", { silent = true, desc = "pi-ide: add selected entries" })
vim.keymap.set("n", "<Plug>(PiIdeAdd)", "<Cmd>PiIde add<CR>", { silent = true, desc = "pi-ide: add entry or file" })

-- The agent's terminal: open it (started and connected when it is not running), or hide it
-- when you are in it. Not mapped by default (the README shows <leader>ap).
vim.keymap.set({ "n", "t" }, "<Plug>(PiIdeTerminal)", function()
  require("pi-ide.features.terminal").toggle()
end, { desc = "pi-ide: agent terminal" })

-- Insert mode: suggestion actions, for mapping to your own keys (defaults: :help pi-ide-keys).
require("pi-ide.features.suggest.keys").define_plugs()

-- Start after VimEnter, so the first screen is never delayed; when the plugin is loaded later
-- (lazy-loading), on the next turn of the loop, after setup() has run.
local function autostart()
  require("pi-ide.core.gc").eager(function()
    require("pi-ide").autostart()
  end)
end
if vim.v.vim_did_enter == 1 then
  vim.schedule(autostart)
else
  vim.api.nvim_create_autocmd("VimEnter", { once = true, callback = autostart })
end
