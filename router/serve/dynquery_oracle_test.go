package serve

import (
	"net/http"

	"github.com/kvhash/kvhash/router/indexer"
)

// oracleDynQuery is the /query handler as it was before the one-pass
// reader (readBody, then encoding/json over the whole body, tokenList
// reading the token array encoding/json had skipped): the reference the
// differential fuzz targets and the benchmark hold the new one to.
// Frozen; do not edit.
func (s *Server) oracleDynQuery(w http.ResponseWriter, r *http.Request) error {
	var req dynQueryRequest
	if err := s.decodeDynamo(w, r, &req); err != nil {
		return err
	}
	switch {
	case req.TokenIDs == nil:
		return missing("token_ids")
	case req.ModelName == nil:
		return missing("model_name")
	case *req.ModelName == "":
		return dynErr(http.StatusBadRequest, "model_name is empty")
	}
	if err := s.checkLabels(label{"model", *req.ModelName}, label{"tenant", group(req.RoutingGroup)}); err != nil {
		return err
	}
	if err := checkTokens(len(*req.TokenIDs), s.cfg.Limits.MaxTokens); err != nil {
		return err
	}
	var po indexer.PromptOptions
	if req.LoraName != nil {
		po.LoraName = *req.LoraName
	}
	if req.CacheSalt != nil {
		po.CacheSalt = *req.CacheSalt
	}
	local, err := s.ix.HashPrompt(*req.TokenIDs, po)
	if err != nil {
		return dynErr(http.StatusBadRequest, "%v", err)
	}
	return s.dynAnswer(w, *req.ModelName, group(req.RoutingGroup), local)
}

// oracleDecodeDynQuery is the old body decoding alone.
func oracleDecodeDynQuery(body []byte) (dynQueryRequest, error) {
	var req dynQueryRequest
	err := decodeDynamoBody(body, &req)
	return req, err
}
