module github.com/obelisk-plan/obelisk

go 1.26.8
