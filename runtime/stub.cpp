namespace staticlm {}
