package main

import (
	"encoding/xml"
	"io"
	"net/http"
	"strings"
)

// vsanVersions is /sdk/vsanServiceVersions.xml: the vSAN API versions this vCenter offers, newest
// first, in the shape of vimServiceVersions.xml (every value from the provenance table).
func vsanVersions() string {
	var b strings.Builder
	b.WriteString(xml.Header + `<namespaces version="` + fact("vsan_versions.document_version") + `">` + "\n")
	b.WriteString(" <namespace>\n  <name>" + fact("vsan_versions.namespace") + "</name>\n")
	b.WriteString("  <version>" + fact("vsan_versions.current") + "</version>\n  <priorVersions>\n")
	for _, f := range facts {
		if strings.HasPrefix(f.ID, "vsan_versions.prior.") {
			b.WriteString("   <version>" + fact(f.ID) + "</version>\n")
		}
	}
	b.WriteString("  </priorVersions>\n </namespace>\n</namespaces>\n")
	return b.String()
}

func serveVsanVersions(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	_, _ = io.WriteString(w, vsanVersions())
}
