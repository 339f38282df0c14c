package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
)

// vimOnVsanEndpoint names the vim property-collector calls a client may send
// to /vsanHealth when it reads a property of an object the vSAN API returned
// (pyVmomi binds such objects to its vSAN stub). vCenter's vSAN endpoint does
// not serve them; the client must read through its /sdk session instead.
var vimOnVsanEndpoint = []string{"<Fetch", "RetrieveProperties", "WaitForUpdates", "CreateFilter"}

const notSupportedFault = `<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body><soapenv:Fault><faultcode>ServerFaultCode</faultcode><faultstring>property collector calls are served on /sdk, not on the vSAN endpoint</faultstring><detail><NotSupportedFault xmlns="urn:vim25" xsi:type="NotSupported"></NotSupportedFault></detail></soapenv:Fault></soapenv:Body></soapenv:Envelope>`

// guardVsanEndpoint answers vim property calls on the vSAN endpoint with a
// NotSupported fault (the simulator would otherwise drop the connection) and
// passes everything else to next.
func guardVsanEndpoint(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
		_ = r.Body.Close()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		head := string(body[:min(len(body), 4096)])
		for _, marker := range vimOnVsanEndpoint {
			if strings.Contains(head, marker) && asDocumented("vsan_endpoint.property_collector") {
				w.Header().Set("Content-Type", "text/xml; charset=utf-8")
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, notSupportedFault)
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next(w, r)
	}
}
