-- A blink.cmp source: the agent's suggestion as an item of blink's menu. While the menu is open
-- the ghost text hides under it; this way the suggestion is still there to see and take.
--
--   sources = { default = { "pi_ide" }, providers = {
--     pi_ide = { name = "Pi", module = "pi-ide.blink", async = true, score_offset = 100 } } }
--
-- It never asks the agent itself: it offers what the typing trigger asked for, waiting for the
-- answer when one is on its way.
local Source = {}
Source.__index = Source

local TEXT_KIND = 1 -- LSP CompletionItemKind.Text: blink adds no brackets to it

function Source.new(opts)
  return setmetatable({ opts = opts or {} }, Source)
end

function Source:enabled()
  local server = package.loaded["pi-ide.core.server"]
  return server ~= nil and server.running() and server.agent_name() ~= nil
end

-- Items for the suggestion that fits at the cursor: each replaces the word being typed with
-- that word and the rest of the suggestion, so blink's matching on the word keeps it.
local function items_for(ctx, current)
  if not current then
    return {}
  end
  local row, col = ctx.cursor[1] - 1, ctx.cursor[2]
  local start = math.min(ctx.bounds.start_col - 1, col)
  local word = ctx.line:sub(start + 1, col)
  local ft = vim.bo.filetype
  local items = {}
  for i, text in ipairs(current.texts) do
    local new_text = word .. text
    local first = new_text:match("^[^\n]*")
    local label = vim.trim(first) ~= "" and vim.trim(first) or vim.trim(new_text:gsub("\n", " "))
    table.insert(items, {
      label = #label > 80 and (label:sub(1, 77) .. "...") or label,
      filterText = first,
      kind = TEXT_KIND,
      kind_name = "Pi",
      kind_icon = "π",
      sortText = ("%02d"):format(i),
      insertTextFormat = 1, -- plain text: a suggestion is code, never a snippet
      textEdit = {
        newText = new_text,
        range = { start = { line = row, character = start }, ["end"] = { line = row, character = col } },
      },
      documentation = { kind = "markdown", value = ("```%s\n%s\n```"):format(ft, new_text) },
      data = { pi_ide = text },
    })
  end
  return items
end

function Source:get_completions(ctx, callback)
  local suggest = package.loaded["pi-ide.features.suggest"]
  local function respond()
    local items = suggest and items_for(ctx, suggest.current()) or {}
    -- Incomplete: blink asks again on the next keystroke, so a newer answer is never missed.
    callback({ items = items, is_incomplete_forward = true, is_incomplete_backward = true })
  end
  if not suggest or suggest.current() or not suggest.pending() then
    respond()
    return
  end
  return suggest.when_answered(respond)
end

-- blink inserts the item; we count it like a <Tab> accept.
function Source:execute(ctx, item, callback, default_implementation)
  default_implementation()
  local suggest = package.loaded["pi-ide.features.suggest"]
  if suggest and item.data and item.data.pi_ide then
    suggest.accepted_elsewhere(item.data.pi_ide)
  end
  callback()
end

return Source
