-- What Pi's extensions ask of the user (extension_ui_request), answered in Neovim:
-- select → vim.ui.select, confirm → a Yes/No vim.ui.select, input → vim.ui.input, editor → a
-- scratch buffer that :w returns, notify → vim.notify. Escaping answers "cancelled".
local log = require("pi-ide.core.log")

local M = {}

-- Requests not answered yet (id → true): the statusline says "waiting for you".
local open = {}

function M.waiting()
  return next(open) ~= nil
end

local function answer(reply, id, fields)
  if not open[id] then
    return -- answered already (an editor buffer wiped after :w)
  end
  open[id] = nil
  reply(vim.tbl_extend("force", { type = "extension_ui_response", id = id }, fields))
  require("pi-ide.features.chat").changed()
end

local function title_of(req)
  local t = req.title or "Pi asks"
  return req.message and req.message ~= "" and (t .. ": " .. req.message) or t
end

local function select(req, reply)
  local options = type(req.options) == "table" and req.options or {}
  vim.ui.select(options, { prompt = title_of(req) }, function(choice)
    answer(reply, req.id, choice ~= nil and { value = choice } or { cancelled = true })
  end)
end

local function confirm(req, reply)
  vim.ui.select({ "Yes", "No" }, { prompt = title_of(req) }, function(choice)
    answer(reply, req.id, choice ~= nil and { confirmed = choice == "Yes" } or { cancelled = true })
  end)
end

local function input(req, reply)
  vim.ui.input({ prompt = title_of(req) .. ": " }, function(text)
    answer(reply, req.id, text ~= nil and { value = text } or { cancelled = true })
  end)
end

-- A scratch buffer in a split holding the prefill: :w sends its text, closing it unsent
-- cancels.
local function editor(req, reply)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = "acwrite"
  vim.bo[buf].bufhidden = "wipe"
  -- A name without "/": a tabline shortens every folder of a name.
  pcall(vim.api.nvim_buf_set_name, buf, ("Pi editor %s"):format(req.id))
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(req.prefill or "", "\n", { plain = true }))
  vim.bo[buf].modified = false
  vim.api.nvim_create_autocmd("BufWriteCmd", {
    buffer = buf,
    callback = function()
      local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
      answer(reply, req.id, { value = text })
      vim.bo[buf].modified = false
      vim.schedule(function()
        for _, win in ipairs(vim.fn.win_findbuf(buf)) do
          pcall(vim.api.nvim_win_close, win, true)
        end
      end)
    end,
  })
  vim.api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    callback = function()
      answer(reply, req.id, { cancelled = true })
    end,
  })
  vim.cmd("botright split")
  vim.api.nvim_win_set_buf(0, buf)
  local bar = ("%s — :w sends it, :q cancels"):format(title_of(req))
  vim.api.nvim_set_option_value("winbar", (bar:gsub("%%", "%%%%")), { win = 0, scope = "local" })
end

local LEVELS = { warning = vim.log.levels.WARN, error = vim.log.levels.ERROR }

-- Shows a dialog; one that fails to show answers "cancelled", so that Pi is not left waiting.
local function show(dialog, req, reply)
  local ok, err = pcall(dialog, req, reply)
  if not ok then
    log.notify(("cannot show Pi's %s: %s"):format(req.method, tostring(err)), vim.log.levels.ERROR)
    answer(reply, req.id, { cancelled = true })
  end
end

local dialogs = { select = select, confirm = confirm, input = input, editor = editor }

--- Handles one request; `reply(fields)` sends the response to Pi.
function M.handle(req, reply)
  local method = req.method
  if method == "notify" then
    local message = tostring(req.message or "")
    -- The pi-ide extension connected to this Neovim: the chat says so, no pop-up needed.
    if message:match("^Auto%-connected to ") then
      return require("pi-ide.features.chat").connected(message)
    end
    vim.notify("Pi: " .. message, LEVELS[req.notifyType] or vim.log.levels.INFO)
    return
  end
  local dialog = dialogs[method]
  if not dialog then
    -- setStatus, setWidget, setTitle, set_editor_text: nothing of ours shows them.
    return log.debug("chat: extension UI %s not shown", tostring(method))
  end
  if req.id == nil or open[req.id] then
    -- One answer per id: a second question with the id of one that waits would take the
    -- answer meant for the other. It is answered "cancelled" at once and shown nowhere.
    log.warn("chat: Pi asked %s with the id %s of a question that waits: cancelled", tostring(method), tostring(req.id))
    return reply({ type = "extension_ui_response", id = req.id, cancelled = true })
  end
  open[req.id] = true
  require("pi-ide.features.chat").changed()
  -- Pi answers a dialog itself when its timeout passes (and ignores a late answer): ours is
  -- then void, and we say so.
  if type(req.timeout) == "number" and req.timeout > 0 then
    vim.defer_fn(function()
      if open[req.id] then
        open[req.id] = nil
        require("pi-ide.features.chat").changed()
        vim.notify(("pi-ide.nvim: Pi stopped waiting for an answer to %q"):format(title_of(req)), vim.log.levels.WARN)
      end
    end, req.timeout)
  end
  -- While the user types, a picker would take their keys (a digit, <CR> picking "Allow"):
  -- it waits for Normal mode, as a review does.
  local typing = require("pi-ide.core.typing")
  if not typing.busy_mode() then
    return show(dialog, req, reply)
  end
  typing.say_waiting("Pi's question")
  typing.when_normal("showing Pi's question", function()
    if open[req.id] then -- not dropped by its timeout or Pi's exit meanwhile
      show(dialog, req, reply)
    end
  end)
end

--- Pi went away: what it asked cannot be answered any more.
function M.forget()
  open = {}
end

return M
