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

// TestIsIdentifierRangeEnds: the first and last character of each range
// an identifier may use pass, and the characters just outside fail.
func TestIsIdentifierRangeEnds(t *testing.T) {
	for _, s := range []string{"a", "z", "A", "Z", "_", "_0", "_9"} {
		if !IsIdentifier(s) {
			t.Errorf("IsIdentifier(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"`", "{", "@", "[", "0", "9", "_/", "_:"} {
		if IsIdentifier(s) {
			t.Errorf("IsIdentifier(%q) = true, want false", s)
		}
	}
}
