package settings_test

import (
	"fmt"

	"github.com/flockrun/flock/phases/settings"
)

type exampleModel struct {
	Model       string   `json:"model"`
	Temperature *float64 `json:"temperature,omitempty" min:"0" max:"2"`
}

type exampleSettings struct {
	MaxTurns int                     `json:"max_turns,omitempty" default:"30" min:"0"`
	Format   string                  `json:"format,omitempty" default:"jsonl" enum:"jsonl,csv"`
	Models   map[string]exampleModel `json:"models,omitempty"`
}

func ExampleDecode() {
	var s exampleSettings
	err := settings.Decode([]byte(`{"format": "csv"}`), &s)
	fmt.Println(s.MaxTurns, s.Format, err)

	err = settings.Decode([]byte(`{"models": {"gpt": {"model": "gpt-4o", "temperature": 3}}}`), &s)
	fmt.Println(err)
	// Output:
	// 30 csv <nil>
	// models.gpt.temperature: must be between 0 and 2
}

func ExampleKeys_Check() {
	keys := settings.KeysOf(exampleSettings{}).Merge(settings.OpenKeys("limits"))
	for _, f := range keys.Check([]byte(`{"max_turn": 3, "limits": {"x": 1}, "models": {"gpt": {"modle": "m"}}}`)) {
		fmt.Println(f)
	}
	err := settings.Decoder{Strict: true}.Decode([]byte(`{"formt": "csv"}`), new(exampleSettings))
	fmt.Println(err)
	// Output:
	// unknown key "max_turn" (did you mean "max_turns"?)
	// unknown key "models.gpt.modle" (did you mean "models.gpt.model"?)
	// unknown key "formt" (did you mean "format"?)
}
