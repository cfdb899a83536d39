package pyname

import "testing"

func TestIsIdentifier(t *testing.T) {
	for s, want := range map[string]bool{
		"main": true, "_x1": true, "Main_2": true,
		"": false, "1x": false, "a-b": false, "a.b": false, "class": false, "None": false,
		"é": false, "main ": false, "main()": false,
	} {
		if got := IsIdentifier(s); got != want {
			t.Errorf("IsIdentifier(%q) = %v, want %v", s, got, want)
		}
	}
	if !IsKeyword("lambda") || IsKeyword("main") {
		t.Error("IsKeyword")
	}
}
