-- :PiIde chat [model|thinking|restart|stop] and :[range]PiIde ask {text}.
local M = {}

local actions = {
  model = function()
    require("pi-ide.features.chat.pickers").model()
  end,
  thinking = function()
    require("pi-ide.features.chat.pickers").thinking()
  end,
  restart = function()
    local chat = require("pi-ide.features.chat")
    chat.stop()
    chat.ensure()
  end,
  stop = function()
    require("pi-ide.features.chat").stop()
  end,
}

M.names = vim.tbl_keys(actions)
table.sort(M.names)

function M.run(action)
  if not action then
    return require("pi-ide.features.chat").toggle()
  end
  local fn = actions[action]
  if not fn then
    return vim.notify(
      ("pi-ide.nvim: :PiIde chat takes %s, or nothing (got '%s')"):format(table.concat(M.names, ", "), action),
      vim.log.levels.ERROR
    )
  end
  fn()
end

-- The range's lines, with the file they are in, as a Markdown quote for the prompt.
local function quoted_range(opts)
  local buf = vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(buf)
  local where = name ~= "" and vim.bo[buf].buftype == "" and vim.fn.fnamemodify(name, ":~:.") or "the current buffer"
  local lines = vim.api.nvim_buf_get_lines(buf, opts.line1 - 1, opts.line2, false)
  local fence = "```"
  for _, l in ipairs(lines) do
    -- A fence longer than any backtick run in the text, so the quote cannot end early.
    for run in l:gmatch("`+") do
      if #run >= #fence then
        fence = ("`"):rep(#run + 1)
      end
    end
  end
  local head = ("In %s, lines %d-%d:"):format(where, opts.line1, opts.line2)
  return table.concat(vim.list_extend({ head, fence .. vim.bo[buf].filetype }, vim.list_extend(lines, { fence })), "\n")
end

--- :[range]PiIde ask {text}: the text (and the range's lines) to Pi; the chat shows, the
--- cursor stays. With a range and no text, the quote waits in the prompt for the question.
function M.ask(opts)
  local chat = require("pi-ide.features.chat")
  local text = table.concat(vim.list_slice(opts.fargs, 2), " ")
  local quote = opts.range > 0 and quoted_range(opts) or nil
  if text == "" and not quote then
    return vim.notify("pi-ide.nvim: :PiIde ask needs a question (or a range)", vim.log.levels.ERROR)
  end
  if text == "" then
    if chat.open(true) then
      chat.set_prompt(quote .. "\n\n")
    end
    return
  end
  if chat.open(false) then
    chat.send(quote and (quote .. "\n\n" .. text) or text)
  end
end

return M
