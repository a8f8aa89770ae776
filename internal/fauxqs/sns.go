package fauxqs

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// SNS makes one SNS query-protocol call to the emulator (form in, XML
// out), so that no module needs an SNS client for its tests, and returns
// the text of the answer's element named want ("" for none). A failed call
// fails t.
func (e *Emulator) SNS(t testing.TB, form url.Values, want string) string {
	t.Helper()
	form.Set("Version", "2010-03-31")
	resp, err := http.Post(e.Endpoint, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("SNS %s: %s: %s", form.Get("Action"), resp.Status, body)
	}
	if want == "" {
		return ""
	}
	d := xml.NewDecoder(strings.NewReader(string(body)))
	for {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("SNS %s: no %s in %s", form.Get("Action"), want, body)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == want {
			var v string
			if err := d.DecodeElement(&v, &se); err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
}
