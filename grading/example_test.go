package grading_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/flockrun/flock/grading"
	"github.com/flockrun/flock/operations"
)

func ExampleNormalize() {
	fmt.Println(grading.Normalize("The U.S.A.'s answer: 3.5!"))
	// Output: usas answer 3.5
}

func ExampleScore() {
	refs := []string{"New York City", "NYC"}
	for _, name := range []string{"exact_match", "f1", "contains_answer", "similarity"} {
		s, err := grading.Score(name, "It is New York.", refs)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s %.3f\n", name, s)
	}
	// Output:
	// exact_match 0.000
	// f1 0.571
	// contains_answer 0.000
	// similarity 0.214
}

func ExampleF1() {
	// Tokens {cat sat on mat} against {cat on mat}: P = 3/4, R = 1.
	fmt.Printf("%.4f\n", grading.F1("The cat sat on the mat.", "a cat on a mat"))
	// Output: 0.8571
}

func ExampleContainsAnswer() {
	fmt.Println(grading.ContainsAnswer("The answer is 10.", "1"))
	fmt.Println(grading.ContainsAnswer("The answer is 10.", "10"))
	// Output:
	// 0
	// 1
}

func ExampleNumericMatch() {
	for _, pred := range []string{"The answer is 1,234.", "1.234e3", `\boxed{1234}`, "I tried 1234 but the answer is 1240"} {
		s, _ := grading.NumericMatch(pred, "1234")
		fmt.Println(s)
	}
	_, err := grading.NumericMatch("5", "five")
	fmt.Println(err)
	// Output:
	// 1
	// 1
	// 1
	// 1
	// reference is not numeric
}

func ExampleTolerance_Match() {
	strict := grading.Tolerance{Abs: 1e-6}
	loose, _ := grading.NumericMatch("101", "100")
	exact, _ := strict.Match("101", "100")
	fmt.Println(loose, exact)
	// Output: 1 0
}

func ExampleMainNumber() {
	n, _ := grading.MainNumber("Half of 90 is 45, so the answer is 45% of the total.")
	fmt.Println(n.Value, n.Percent, n.Text)
	// Output: 45 true 45%
}

func ExampleJudge_Messages() {
	msgs := grading.Judge{}.Messages("Capital of France?", "Paris", []string{"Paris"})
	fmt.Println(msgs[0].Role)
	fmt.Println(msgs[1].Role)
	fmt.Println(msgs[1].Content)
	// Output:
	// system
	// user
	// <question>
	// Capital of France?
	// </question>
	//
	// <reference>
	// Paris
	// </reference>
	//
	// <candidate>
	// Paris
	// </candidate>
}

func ExampleParseJudgeReply() {
	v, err := grading.ParseJudgeReply("Verdict:\n```json\n{\"correct\": true, \"reasoning\": \"Same city.\"}\n```")
	fmt.Println(v.Correct, v.Reasoning, err)
	_, err = grading.ParseJudgeReply("I think this is true.")
	fmt.Println(err)
	// Output:
	// true Same city. <nil>
	// invalid judge reply: no JSON object with a "correct" field
}

func ExamplePassAtK() {
	for k := 1; k <= 3; k++ {
		p, _ := grading.PassAtK(3, 1, k)
		fmt.Printf("pass@%d = %.4f\n", k, p)
	}
	p, _ := grading.PassAtK(5, 2, 2)
	fmt.Printf("n=5 c=2 pass@2 = %.4f\n", p)
	// Output:
	// pass@1 = 0.3333
	// pass@2 = 0.6667
	// pass@3 = 1.0000
	// n=5 c=2 pass@2 = 0.7000
}

func ExampleSummarize() {
	s := grading.Summarize([]grading.Sample{
		{TaskID: "a", Score: 1, Correct: true},
		{TaskID: "a", Failed: true},
		{TaskID: "b", Score: 0.5},
		{TaskID: "b", Score: 1, Correct: true},
	})
	out, _ := json.Marshal(s)
	fmt.Println(string(out))
	// Output: {"samples":4,"tasks":2,"failed":1,"correct":2,"mean_score":0.625,"success_rate":0.75,"pass_at_k":[0.5,1]}
}

func ExampleGRPOAdvantages() {
	rewards := []float64{1, 0, 0, 1}
	fmt.Printf("%.4f\n", grading.GRPOAdvantages(rewards, true, 1e-6))
	fmt.Printf("%.4f\n", grading.RLOOAdvantages(rewards))
	// Output:
	// [0.8660 -0.8660 -0.8660 0.8660]
	// [0.6667 -0.6667 -0.6667 0.6667]
}

func ExampleGroupTrajectories() {
	step := []grading.Step{{ModelResponse: "..."}}
	var episodes []grading.Episode
	for i, r := range []float64{1, 0, 0} {
		episodes = append(episodes, grading.Episode{
			ID:                grading.EpisodeID("task7", i),
			TerminationReason: grading.TerminationEnvDone,
			Trajectories:      []grading.Trajectory{{Name: "solver", Steps: step, Reward: r}},
		})
	}
	groups, _ := grading.GroupTrajectories(episodes)
	for _, g := range groups {
		adv, _ := grading.Advantages(g.Rewards(), grading.AdvantageOptions{Estimator: grading.EstimatorRLOO})
		fmt.Println(g.ID, g.Rewards(), adv)
	}
	// Output: task7:solver [1 0 0] [1 -0.5 -0.5]
}

func ExampleSegmentRewards() {
	for _, mode := range []string{"last_only", "broadcast", "uniform", "geometric"} {
		rs, _ := grading.SegmentRewards(mode, 1, 3, 0.5)
		fmt.Printf("%-9s %.4f\n", mode, rs)
	}
	// Output:
	// last_only [0.0000 0.0000 1.0000]
	// broadcast [1.0000 1.0000 1.0000]
	// uniform   [0.3333 0.3333 0.3333]
	// geometric [0.1429 0.2857 0.5714]
}

func ExampleParseVerifierOutput() {
	res, err := grading.ParseVerifierOutput([]byte(`{"reward": 0.5, "is_correct": false, "signals": {"tests_passed": 0.5}}`))
	fmt.Println(res.Reward, res.IsCorrect, res.Signals, err)
	_, err = grading.ParseVerifierOutput([]byte(`{"score": 1}`))
	fmt.Println(err)
	// Output:
	// 0.5 false map[tests_passed:0.5] <nil>
	// invalid verifier output: no "reward" field
}

func ExampleEpisode() {
	e := grading.Episode{
		SchemaVersion: grading.EpisodeSchemaVersion,
		ID:            grading.EpisodeID("q1", 0),
		Task:          json.RawMessage(`{"question":"2+2?","answer":"4"}`),
		Trajectories: []grading.Trajectory{{
			Name: "solver",
			Steps: []grading.Step{{
				ChatCompletions: []operations.Message{
					{Role: operations.RoleUser, Content: "2+2?"},
					{Role: operations.RoleAssistant, Content: "4"},
				},
				ModelResponse:      "4",
				Reward:             1,
				CompletionTokenIDs: []int{19},
				Logprobs:           []float64{-0.01},
			}},
			Reward: 1,
		}},
		Artifacts:         grading.Artifacts{Answer: "4"},
		IsCorrect:         true,
		TerminationReason: grading.TerminationEnvDone,
	}
	if err := e.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(e)
	// Output:
	// {
	//   "schema_version": 1,
	//   "id": "q1:0",
	//   "task": {
	//     "question": "2+2?",
	//     "answer": "4"
	//   },
	//   "trajectories": [
	//     {
	//       "name": "solver",
	//       "steps": [
	//         {
	//           "chat_completions": [
	//             {
	//               "role": "user",
	//               "content": "2+2?"
	//             },
	//             {
	//               "role": "assistant",
	//               "content": "4"
	//             }
	//           ],
	//           "model_response": "4",
	//           "reward": 1,
	//           "done": false,
	//           "segment": 0,
	//           "completion_token_ids": [
	//             19
	//           ],
	//           "logprobs": [
	//             -0.01
	//           ]
	//         }
	//       ],
	//       "reward": 1
	//     }
	//   ],
	//   "artifacts": {
	//     "answer": "4"
	//   },
	//   "is_correct": true,
	//   "termination_reason": "env_done"
	// }
}
