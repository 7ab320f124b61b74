package journal

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/obelisk-plan/obelisk/bench"
	"github.com/obelisk-plan/obelisk/compiler/planfile"
	"github.com/obelisk-plan/obelisk/runtime"
	"github.com/obelisk-plan/obelisk/vm"
)

func TestTmpStat(t *testing.T) {
	p := bench.Layered(100, 100, 0, bench.LayeredSeed(100, 100))
	src := &planfile.Source{Name: p.Name + ".plan", Text: string(p.Text())}
	prog, _, _ := src.Compile()
	var file struct{ Tools []runtime.Definition }
	json.Unmarshal(p.ToolsJSON(), &file)
	reg := runtime.NewRegistry()
	reg.MustRegister(file.Tools[0], runtime.ToolFunc(bench.Work))
	d := open(t, Options{})
	batches, recs, durable := 0, 0, 0
	d.committed = func(b []record) {
		batches++
		recs += len(b)
		for i := range b {
			if b[i].durable() {
				durable++
				break
			}
		}
	}
	r, _ := d.Create(NewRun{ID: "x", Source: src})
	t0 := time.Now()
	res, err := vm.Run(context.Background(), prog, map[string]any{"seed": int64(0)}, vm.Options{Tools: reg, MaxParallel: 8, Journal: r, RunID: "x", Observer: func(vm.Event) {}})
	t.Logf("%v %v %v batches %d (durable %d) records %d", time.Since(t0), err, res.Status, batches, durable, recs)
}
