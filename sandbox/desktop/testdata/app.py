# A small Tk application for the desktop backend's tests: a button, a text
# field and a label at fixed places in a 400x200 window at (0, 0). Every
# change is written to state.json in the working directory (the session's
# workspace): the click count, the field's text, and the process's pid and
# DISPLAY. A click turns the label red.
import json
import os
import sys
import tkinter as tk

root = tk.Tk()
root.title(sys.argv[1] if len(sys.argv) > 1 else "flock test app")
root.geometry("400x200+0+0")
root.configure(bg="white")
state = {"clicks": 0, "text": "", "pid": os.getpid(), "display": os.environ.get("DISPLAY", "")}


def save(*_):
    state["text"] = entry.get()
    with open("state.json.tmp", "w") as f:
        json.dump(state, f)
    os.replace("state.json.tmp", "state.json")


def press():
    state["clicks"] += 1
    label.configure(text="clicks: %d" % state["clicks"], bg="red")
    save()


button = tk.Button(root, text="Press", command=press)
button.place(x=20, y=20, width=120, height=40)
entry = tk.Entry(root)
entry.place(x=20, y=80, width=300, height=30)
entry.bind("<KeyRelease>", save)
label = tk.Label(root, text="clicks: 0", bg="white")
label.place(x=20, y=130, width=200, height=40)
root.after(0, save)
root.mainloop()
