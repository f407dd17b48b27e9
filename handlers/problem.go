package handlers

import "github.com/onceflow/onceflow/problem"

// ProblemContentType is the media type of the API's errors: RFC 9457
// problem details, written by [problem.Write].
const ProblemContentType = problem.ContentType
