package gateway

import (
	"net/http"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/gateway/client"
)

// listQuestions answers GET /api/questions[?sessionKey=K]: the questions
// subagents asked the person (ask_user) that wait for an answer, oldest
// first.
func (s *Server) listQuestions(w http.ResponseWriter, r *http.Request) {
	out := client.QuestionList{Questions: []client.Question{}}
	for _, q := range s.rt.Questions(r.URL.Query().Get("sessionKey")) {
		out.Questions = append(out.Questions, toClientQuestion(q))
	}
	writeJSON(w, http.StatusOK, out)
}

// answerQuestion answers POST /api/questions/{id}/answer {"answer": "…"}:
// the answer becomes the subagent's ask_user result.
func (s *Server) answerQuestion(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "question")
	if err != nil {
		fail(w, err)
		return
	}
	var req client.AnswerRequest
	if err := decode(w, r, s.opt.MaxBody, &req); err != nil {
		fail(w, err)
		return
	}
	if len(req.Answer) == 0 || len(req.Answer) > maxMessage {
		fail(w, badRequestf("answer: want 1 to %d bytes", maxMessage))
		return
	}
	q, err := s.rt.Answer(req.SessionKey, id, req.Answer)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, toClientQuestion(q))
}

func toClientQuestion(q ava.Question) client.Question {
	return client.Question{ID: q.ID, SessionKey: q.Session, SubagentID: q.SubagentID, Role: q.Role, Question: q.Text,
		AskedAt: q.AskedAt, ExpiresAt: q.ExpiresAt}
}
