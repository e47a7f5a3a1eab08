-- Loading the plugin's modules leaves the Lua parser's garbage behind (about twice what the
-- modules keep). With Neovim's default pause the collector lets the heap grow by all of it
-- before the next cycle, and LuaJIT keeps those pages: ~0.2 MiB more private memory while no
-- agent is connected (measured with `scripts/bench --only rss`; once one is, the heap grows
-- that far anyway). While the plugin loads, a cycle starts as soon as the last one ends, so
-- that garbage is reused instead (about 0.2 ms of collecting, spread over the load).
local M = {}

--- Runs fn with the collector eager, then puts the pause back; errors pass through.
function M.eager(fn, ...)
  local pause = collectgarbage("setpause", 100)
  -- A pause only sets where the next cycle starts; one step starts it now.
  collectgarbage("step", 0)
  local ok, err = pcall(fn, ...)
  collectgarbage("setpause", pause)
  if not ok then
    error(err, 0)
  end
end

return M
