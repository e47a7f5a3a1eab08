-- What tests/chat/ asks of Neovim, by name (see tests/lua/pi_ide_test.lua).
local M = {}

--- Starts a chat through the core with chat_start's `opts`; its ops, drained on the uv async
--- wake, gather in _G.chat_ops (_G.find(kind): the first of a kind), its id in _G.chat_id.
function M.start_core_chat(opts)
  local n = assert(require("pi-ide.core.native").load())
  _G.chat_ops = {}
  function _G.find(kind)
    for _, op in ipairs(_G.chat_ops) do
      if op.kind == kind then
        return op
      end
    end
  end
  _G.chat_async = vim.uv.new_async(function()
    for _, op in ipairs(n.chat_drain(_G.chat_id)) do
      table.insert(_G.chat_ops, op)
    end
  end)
  _G.chat_id = n.chat_start(opts, _G.chat_async)
end

--- Pi's extension asks twice with one id: what is shown gathers in _G.shown, the replies in
--- _G.replies, and _G.pick answers the picker that is open.
function M.ask_twice_with_one_id()
  _G.replies, _G.shown = {}, {}
  vim.ui.select = function(_, opts, cb)
    table.insert(_G.shown, opts.prompt)
    _G.pick = cb
  end
  local dialogs = require("pi-ide.features.chat.dialogs")
  local reply = function(r)
    table.insert(_G.replies, r)
  end
  local ask = { type = "extension_ui_request", id = "q1", method = "confirm" }
  dialogs.handle(vim.tbl_extend("force", ask, { title = "Format a.txt?" }), reply)
  dialogs.handle(vim.tbl_extend("force", ask, { title = "Delete the repository?" }), reply)
end

return M
