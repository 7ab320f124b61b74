// Command toolserver is a small weather service for trying Obelisk's
// tools from outside a plan, offline: the same two operations served three
// ways.
//
//	toolserver http ADDR   an HTTP API on ADDR (such as 127.0.0.1:8787)
//	toolserver mcp         an MCP server on standard input and output
//	toolserver packing     one call of the packing list as a command tool:
//	                       JSON arguments on standard input, JSON result out
//
// The HTTP API wants the header "Authorization: Bearer TOKEN", where TOKEN
// is the environment variable WEATHER_TOKEN of the server (demo-token when
// it is not set). Obelisk's HTTP tools (examples/weather.tools.json) reach
// it only when the command line grants the address and the variables they
// read, as in
//
//	WEATHER_URL=http://127.0.0.1:8787 WEATHER_TOKEN=demo-token obelisk run \
//	  --tools examples/weather.tools.json --no-mocks --allow-commands \
//	  --allow-env=WEATHER_URL,WEATHER_TOKEN --allow-net=127.0.0.1:8787 examples/weather.plan
//
// The API:
//
//	GET  /v1/forecast/{city}?days=N   {"city", "daily": [{"day", "high", "low", "rain"}]}
//	POST /v1/notes                    {"title", "items"} → {"id"}; an Idempotency-Key
//	                                  header makes a repeated request return the same note
//
// The forecasts are made up, the same for a city every time.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/google/jsonschema-go/jsonschema"
	"hash/fnv"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: toolserver http ADDR | toolserver mcp | toolserver packing")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "http":
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: toolserver http ADDR")
			os.Exit(2)
		}
		token := os.Getenv("WEATHER_TOKEN")
		if token == "" {
			token = "demo-token"
		}
		// It says where it serves once it listens, so that a script
		// (or a test) may start it in the background and wait for the line.
		var ln net.Listener
		if ln, err = net.Listen("tcp", os.Args[2]); err == nil {
			log.Printf("serving the weather API on http://%s (obelisk reaches it with --allow-net=%s)", ln.Addr(), ln.Addr())
			err = http.Serve(ln, newAPI(token))
		}
	case "mcp":
		err = mcpServer().Run(context.Background(), &sdk.StdioTransport{})
	case "packing":
		var in PackingIn
		if err = json.NewDecoder(os.Stdin).Decode(&in); err == nil {
			err = json.NewEncoder(os.Stdout).Encode(packingList(in))
		}
	default:
		err = fmt.Errorf("unknown mode %q: use http, mcp or packing", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "toolserver:", err)
		os.Exit(1)
	}
}

// Day is one day of a forecast.
type Day struct {
	Day  int     `json:"day" jsonschema:"1 is tomorrow"`
	High float64 `json:"high" jsonschema:"°C"`
	Low  float64 `json:"low" jsonschema:"°C"`
	Rain bool    `json:"rain"`
}

// Forecast is a city's forecast.
type Forecast struct {
	City  string `json:"city"`
	Daily []Day  `json:"daily"`
}

// ForecastIn are the arguments of the forecast.
type ForecastIn struct {
	City string `json:"city"`
	Days int    `json:"days,omitempty" jsonschema:"how many days, 1 to 7 (default 3)"`
}

// forecast makes up a forecast from the city's name.
func forecast(in ForecastIn) (Forecast, error) {
	if in.City == "" {
		return Forecast{}, errors.New("no city")
	}
	days := in.Days
	if days == 0 {
		days = 3
	}
	if days < 1 || days > 7 {
		return Forecast{}, fmt.Errorf("days is %d: ask for 1 to 7", days)
	}
	h := fnv.New32a()
	h.Write([]byte(in.City))
	seed := h.Sum32()
	out := Forecast{City: in.City}
	for d := 1; d <= days; d++ {
		v := (seed >> (d * 3)) & 0xff
		high := float64(int(v%30)) - 2
		out.Daily = append(out.Daily, Day{Day: d, High: high, Low: high - float64(4+v%5), Rain: v%3 == 0})
	}
	return out, nil
}

// PackingIn are the arguments of the packing list.
type PackingIn struct {
	Highs []float64 `json:"highs" jsonschema:"the days' highs, °C"`
	Rain  bool      `json:"rain" jsonschema:"whether it rains on any day"`
}

// Packing is a packing list.
type Packing struct {
	Items []string `json:"items"`
}

func packingList(in PackingIn) Packing {
	items := []string{"passport", "charger"}
	lowest, highest := 100.0, -100.0
	for _, h := range in.Highs {
		lowest, highest = min(lowest, h), max(highest, h)
	}
	if len(in.Highs) > 0 && lowest < 8 {
		items = append(items, "warm coat", "gloves")
	}
	if len(in.Highs) > 0 && highest > 22 {
		items = append(items, "sunscreen", "sunglasses")
	}
	if in.Rain {
		items = append(items, "umbrella")
	}
	return Packing{Items: items}
}

// api is the HTTP API.
type api struct {
	token string
	mu    sync.Mutex
	notes map[string]string // idempotency key → note id
	next  int
}

func newAPI(token string) http.Handler {
	a := &api{token: token, notes: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/forecast/{city}", a.forecast)
	mux.HandleFunc("POST /v1/notes", a.addNote)
	return a.auth(mux)
}

func (a *api) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.Printf("%s %s", r.Method, r.URL)
		if r.Header.Get("Authorization") != "Bearer "+a.token {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (a *api) forecast(w http.ResponseWriter, r *http.Request) {
	in := ForecastIn{City: r.PathValue("city")}
	if d := r.URL.Query().Get("days"); d != "" {
		n, err := strconv.Atoi(d)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "days is not a number"})
			return
		}
		in.Days = n
	}
	f, err := forecast(in)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, f)
}

func (a *api) addNote(w http.ResponseWriter, r *http.Request) {
	var note struct {
		Title string   `json:"title"`
		Items []string `json:"items"`
	}
	if err := json.NewDecoder(r.Body).Decode(&note); err != nil || note.Title == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "a note is {\"title\", \"items\"}"})
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	key := r.Header.Get("Idempotency-Key")
	id, seen := a.notes[key]
	if !seen || key == "" {
		a.next++
		id = fmt.Sprintf("N-%d", 1000+a.next)
		a.notes[key] = id
	}
	writeJSON(w, http.StatusCreated, map[string]string{"id": id})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// mcpServer serves the forecast and the packing list as MCP tools.
func mcpServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "toolserver", Version: "v1"}, nil)
	// The schema the SDK infers from a Go slice allows null, since a nil
	// slice encodes as null; forecast never returns one, and says so, so
	// that a plan may read the days without checking for null first.
	out, err := jsonschema.For[Forecast](nil)
	if err != nil {
		panic(err)
	}
	out.Properties["daily"].Types = nil
	out.Properties["daily"].Type = "array"
	sdk.AddTool(s, &sdk.Tool{Name: "forecast", Description: "The forecast for a city, day by day.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}, OutputSchema: out},
		func(ctx context.Context, _ *sdk.CallToolRequest, in ForecastIn) (*sdk.CallToolResult, Forecast, error) {
			f, err := forecast(in)
			return nil, f, err
		})
	sdk.AddTool(s, &sdk.Tool{Name: "packing_list", Description: "What to pack for the given highs and rain.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *sdk.CallToolRequest, in PackingIn) (*sdk.CallToolResult, Packing, error) {
			return nil, packingList(in), nil
		})
	return s
}
