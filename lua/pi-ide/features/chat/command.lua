-- :PiIde chat [agent|model|thinking|mode|restart|stop] and :[range]PiIde ask {text}. The
-- actions and :PiIde ask go to the chat in front (front.lua).
local front = require("pi-ide.features.chat.front")

local M = {}

local function acp_chat()
  return front.name() ~= "pi" and require("pi-ide.features.chat.acp").get(front.name()) or nil
end

local actions = {
  model = function()
    local acp = acp_chat()
    if acp then
      return require("pi-ide.features.chat.acp.pickers").model(acp)
    end
    require("pi-ide.features.chat.pickers").model()
  end,
  thinking = function()
    require("pi-ide.features.chat.pickers").thinking()
  end,
  mode = function()
    local acp = acp_chat()
    if not acp then
      return vim.notify("pi-ide.nvim: :PiIde chat mode is for an ACP agent's chat (Pi's has none)", vim.log.levels.ERROR)
    end
    require("pi-ide.features.chat.acp.pickers").mode(acp)
  end,
  restart = function()
    front.call("stop")
    front.call("ensure")
  end,
  stop = function()
    front.call("stop")
  end,
}

--- What :PiIde chat completes: the agents, then the actions.
function M.names()
  local out = vim.list_extend({ "pi" }, require("pi-ide.features.chat.acp.agents").names())
  local acts = vim.tbl_keys(actions)
  table.sort(acts)
  return vim.list_extend(out, acts)
end

function M.run(action)
  if not action then
    return front.call("toggle")
  end
  if action == "pi" then
    return require("pi-ide.features.chat").toggle()
  end
  local acp = not actions[action] and require("pi-ide.features.chat.acp").get(action)
  if acp then
    return acp:toggle()
  end
  local fn = actions[action]
  if not fn then
    return vim.notify(
      ("pi-ide.nvim: :PiIde chat takes an agent or an action (%s), or nothing (got '%s')"):format(table.concat(M.names(), ", "), action),
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
  local text = table.concat(vim.list_slice(opts.fargs, 2), " ")
  local quote = opts.range > 0 and quoted_range(opts) or nil
  if text == "" and not quote then
    return vim.notify("pi-ide.nvim: :PiIde ask needs a question (or a range)", vim.log.levels.ERROR)
  end
  if text == "" then
    if front.call("open", nil, true) then
      front.call("set_prompt", nil, quote .. "\n\n")
    end
    return
  end
  if front.call("open", nil, false) then
    front.call("send", nil, quote and (quote .. "\n\n" .. text) or text)
  end
end

-- :PiIde resume: a session of the chat in front to go on with.
local function resume()
  local acp = acp_chat()
  if acp then
    return require("pi-ide.features.chat.acp.sessions").pick(acp)
  end
  require("pi-ide.features.chat.sessions").pick()
end

local function chat()
  return require("pi-ide.features.chat")
end

--- The chat's :PiIde subcommands (core/commands.lua).
M.commands = {
  chat = {
    run = function(opts)
      M.run(opts.fargs[2])
    end,
    complete = function(arglead, n)
      return require("pi-ide.core.commands").first_of(M.names)(arglead, n)
    end,
  },
  ask = { run = M.ask },
  abort = { run = function() front.call("abort") end },
  new = { run = function() chat().new() end },
  resume = { run = resume },
  compact = {
    run = function(opts)
      chat().compact(table.concat(vim.list_slice(opts.fargs, 2), " "))
    end,
  },
  export = {
    run = function(opts)
      chat().export(opts.fargs[2])
    end,
    complete = function(arglead, n)
      return require("pi-ide.core.commands").files()(arglead, n)
    end,
  },
}

return M
