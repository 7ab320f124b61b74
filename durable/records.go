package durable

import "github.com/obelisk-plan/obelisk/vm/journal"

// The records a journal keeps of runs, as the Store gives them: plain
// data, read by the programs that list, show and decide on runs.
type (
	// ApprovalPolicy says what becomes of an approval nobody decides:
	// after Timeout (0: never), it is approved when Approve is set,
	// rejected otherwise.
	ApprovalPolicy = journal.ApprovalPolicy
	// Approval is an approval request of a run, and its decision once
	// made.
	Approval = journal.Approval
	// Summary is a run as Store.Runs lists it: its status, plan, step
	// counts and times.
	Summary = journal.Summary
	// Step is a step of a run as recorded, with its wall-clock times.
	Step = journal.Step
	// Stored is what a run recorded when it was created: its source,
	// input, settings and planfile hash.
	Stored = journal.Stored
	// BusyError is returned by Store.Resume for a run another live
	// process is running.
	BusyError = journal.BusyError
	// FinishedError is returned by Store.Resume for a run that has ended.
	FinishedError = journal.FinishedError
)
