// Package qa holds the pure parts of the QA synthesizer: the prompt that
// asks a model for a multi-hop question from a selected trajectory, the
// parser of its JSON reply, the checks a pair must pass, and the
// closed-book filter's prompt and judge. Nothing here calls a model or
// does I/O; the synthesis workflow does, and retries an attempt with the
// failed check's reason (Prompt's feedback) up to max_retries.
//
// # Prompt
//
// Prompt writes a system and a user message: the seed and
// seed_description, the trajectory (intent, tool, parameters and each
// observation cut to 800 runes, a failed call marked as not evidence),
// AgentFlow's requirements (a short factual answer of at most one
// sentence, no how/why questions, the answer not in the question, at most
// 2 sentences and the word and character limits, at least MinHops
// dependent hops, self-contained wording) plus flock's groundedness rule,
// synthesis_tips, qa_examples, and the reply's schema {question, answer,
// reasoning_steps[{hop, fact, evidence, output}]}. From the second attempt
// on, a "Regeneration required" section quotes why the last one was
// rejected. Temperature gives AgentFlow's 0.7 + 0.1 per retry.
//
// # Parse
//
// Parse finds the pair by a string-aware brace-balancing scan, so a bare
// object, a ```json fence or an object inside chatter all work; a reply
// without one, or with broken JSON or fields of the wrong type, is an
// error wrapping ErrInvalidReply that says what is wrong.
//
// # Checks
//
// Check runs, in order and stopping at the first failure: non_empty,
// no_leakage, verbosity (≤ 500 runes, ≤ 85 words), hops (≥ 3 steps) and,
// when CheckOptions.Grounded is set, grounded: the answer and every hop's
// evidence must occur in an observation of a call that did not fail.
//
// Text is compared by words, not bytes: lowercased, split at anything that
// is not a letter or a digit, so case, whitespace, punctuation and markup
// (the JSON of a tool result, the bars of a table) do not matter, and a
// phrase must match whole words ("art" is not in "party", "1" is not in
// "2019"). A leading article of the answer or evidence is ignored. Numbers
// are compared as text, as written: a '.' between digits stays inside the
// word, so "3" is not in "3.5", and "1,234" is "1 234", so it does not
// match "1234" and "42.0" does not match "42". The prompt tells the model to
// copy values exactly, and a failure says which value was not found, so the
// next attempt can copy it. An evidence quoted with an ellipsis is split
// there and each part must occur. This departs from AgentFlow, whose
// leakage check was a substring test and which never checked grounding.
//
// # Closed-book filter
//
// The optional filter asks a model with no trajectory the bare question
// (ClosedBookPrompt). If its reply matches the answer, the question did not
// need the tools and the pair is dropped (ClosedBook returns the
// closed_book failure). Matching is grading's: exact match or
// contains_answer after grading.Normalize (case, punctuation and articles
// dropped); a hedging reply that names the answer among others counts as
// answered.
package qa
