package host_test

import "net/http"

// adminTarget reaches a server's admin_listen with its bearer token.
type adminTarget struct{ addr, token string }

func (a adminTarget) get(path string) (*http.Response, error) {
	req, err := http.NewRequest("GET", "http://"+a.addr+path, nil)
	if err != nil {
		return nil, err
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	return http.DefaultClient.Do(req)
}
