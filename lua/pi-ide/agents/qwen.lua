-- Qwen Code: in the chat (:PiIde chat qwen) over ACP (`qwen --acp`).
--
-- Its sessions start in mode `auto`, which edits without asking: the chat puts it in `default`
-- (features/chat/acp/), where every edit asks with a permission that carries the whole file,
-- and qwen then has the client write it (fs/write_text_file): the chat writes what the user
-- accepted, a new file too (src/chat/acp/).
local M = {
  name = "qwen",
  label = "Qwen Code",
  short = "Qwen",
  install = "npm i -g @qwen-code/qwen-code",
  cmd = { "qwen" },
  acp = {
    cmd = { "qwen", "--acp" },
    mcp = "stdio",
  },
}

return M
