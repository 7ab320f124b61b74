package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nvimHarness loads the Neovim configuration of editors/nvim, and writes
// the diagnostics Neovim holds for the plan, as it shows them, to a file
// once the server has published some; then it quits.
const nvimHarness = `
vim.g.obelisk_cmd = { os.getenv("OBELISK_NVIM_SERVER"), "lsp" }
dofile(os.getenv("OBELISK_NVIM_CONFIG"))
local out = os.getenv("OBELISK_NVIM_OUT")
local default = vim.lsp.handlers["textDocument/publishDiagnostics"]
vim.lsp.handlers["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
  default(err, result, ctx, config)
  local lines = {}
  for _, d in ipairs(vim.diagnostic.get(vim.uri_to_bufnr(result.uri))) do
    local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code) or ""
    table.insert(lines, string.format("%d:%d %s %s", d.lnum + 1, d.col + 1, code, d.message))
  end
  if #lines > 0 then
    vim.fn.writefile(lines, out)
    vim.cmd("qall!")
  end
end
vim.defer_fn(function()
  vim.fn.writefile({ "timeout: filetype=" .. vim.bo.filetype .. " clients=" .. #vim.lsp.get_active_clients() }, out)
  vim.cmd("qall!")
end, 60000)
`

// TestNeovim opens a plan with an error in Neovim, headless, with the
// configuration of editors/nvim (vim.lsp.start_client on Debian's 0.7),
// and reads the diagnostic back as Neovim holds it.
func TestNeovim(t *testing.T) {
	nvim, err := exec.LookPath("nvim")
	if err != nil {
		t.Skip("nvim is not installed: apt-get install neovim")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	config, err := filepath.Abs("../../editors/nvim/obelisk.lua")
	if err != nil {
		t.Fatal(err)
	}
	// The error is after a † on its line: Neovim turns the protocol's
	// UTF-16 column into its own.
	dir := writeFiles(t, map[string]string{
		"harness.lua": nvimHarness,
		"bad.plan":    "a: echo(value: \"†\") -> †state.a\nb: echo(value: †state.a, valeu: 1) -> †state.b\n",
	})
	out := filepath.Join(dir, "diagnostics.txt")
	cmd := exec.Command(nvim, "--headless", "-n", "-i", "NONE", "-u", filepath.Join(dir, "harness.lua"), "bad.plan")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OBELISK_TEST_MAIN=1", "OBELISK_LOG=error", "OBELISK_NVIM_SERVER="+exe, "OBELISK_NVIM_CONFIG="+config, "OBELISK_NVIM_OUT="+out, "XDG_STATE_HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	done := make(chan []byte, 1)
	go func() {
		b, _ := cmd.CombinedOutput()
		done <- b
	}()
	select {
	case b := <-done:
		if len(b) > 0 {
			t.Logf("nvim printed:\n%s", b)
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("nvim did not quit")
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("nvim wrote no diagnostics: %v", err)
	}
	// valeu starts at the 26th character, the 28th byte (Neovim's
	// columns count bytes; † is three).
	want := "2:28 unknown-argument "
	if !strings.HasPrefix(string(got), want) {
		t.Errorf("Neovim's diagnostics:\n%s\nwant a line starting %q", got, want)
	}
}
