-- Obelisk plans in Neovim's built-in LSP client: .plan files get the
-- filetype obelisk, and each starts (or joins) `obelisk lsp`, in the
-- directory that holds obelisk.json above the file (else the current one).
-- Works with Neovim 0.7 (vim.lsp.start_client) and later (vim.lsp.start).
-- Set vim.g.obelisk_cmd before loading it to run another command.
vim.cmd([[autocmd BufNewFile,BufRead *.plan setfiletype obelisk]])

local clients = {}

vim.api.nvim_create_autocmd("FileType", {
  pattern = "obelisk",
  callback = function(args)
    local cmd = vim.g.obelisk_cmd or { "obelisk", "lsp" }
    local dir = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(args.buf), ":p:h")
    local found = vim.fn.findfile("obelisk.json", dir .. ";")
    local root = found ~= "" and vim.fn.fnamemodify(found, ":p:h") or vim.fn.getcwd()
    local config = { name = "obelisk", cmd = cmd, cmd_cwd = root, root_dir = root }
    if vim.lsp.start then
      vim.lsp.start(config)
      return
    end
    if not clients[root] then
      clients[root] = vim.lsp.start_client(config)
    end
    vim.lsp.buf_attach_client(args.buf, clients[root])
  end,
})
