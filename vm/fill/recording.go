package fill

import (
	"github.com/obelisk-plan/obelisk/toolkit/replay"
	"github.com/obelisk-plan/obelisk/vm"
)

// Recording is what a run's tool calls and fillings go through to be
// recorded in a recording (toolkit/replay), or answered from one in place
// of the tools and the filler.
type Recording struct {
	tools    vm.Caller
	recorder *replay.Recorder
	replayer *replay.Replayer
}

// NewRecording wraps a run's tools: with replayFrom (a recording's path,
// "" for none) the recording answers the calls in their place, calling
// no tool; with recordTo ("" for none) every call and its result is
// recorded in that file. Close finishes the recording.
func NewRecording(tools vm.Caller, recordTo, replayFrom string) (*Recording, error) {
	r := &Recording{tools: tools}
	if replayFrom != "" {
		p, err := replay.Load(replayFrom)
		if err != nil {
			return nil, err
		}
		r.tools, r.replayer = p, p
	}
	if recordTo != "" {
		rec, err := replay.NewRecorder(r.tools, recordTo)
		if err != nil {
			return nil, err
		}
		r.tools, r.recorder = rec, rec
	}
	return r, nil
}

// Tools returns the run's tools as the recording wraps them.
func (r *Recording) Tools() vm.Caller { return r.tools }

// Filler returns the run's filler as the recording wraps it: the
// recording's fillings (Replayed) in place of f when it replays, f's
// recorded (Recorded) when it records. A nil f stays nil unless the
// recording replays.
func (r *Recording) Filler(f vm.Filler) vm.Filler {
	if r.replayer != nil {
		f = Replayed(r.replayer)
	}
	if r.recorder != nil && f != nil {
		f = Recorded(f, r.recorder)
	}
	return f
}

// Close finishes the recording, if it records.
func (r *Recording) Close() error {
	if r.recorder == nil {
		return nil
	}
	return r.recorder.Close()
}
