/* main.c -- the tirlua program: Lua 5.4's lua.c with tir loaded.
**
**   tirlua [options] [script [args]]
**
** Options, the `arg` table, TIRLUA_INIT and error reporting follow lua.c
** (reference/codebase-anchors.md sections 5 and 9); long options set tir.config fields
** before the script runs.  The REPL loads GNU readline (or libedit) with dlopen at run
** time, so the binary also runs where neither is installed (it then reads with getline).
*/
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "tir/kernel_cache.h"
#include "tir/interp.h"
#include "tir/tirlua.h"

#define PROGNAME "tirlua"
#define PROMPT "tirlua> "
#define PROMPT2 "   ...> "
#define INIT_VAR "TIRLUA_INIT"
#define HISTORY_FILE ".tirlua_history" /* in $HOME */
#define HISTORY_MAX 1000
#define LUA_MM LUA_VERSION_MAJOR "." LUA_VERSION_MINOR

static lua_State *globalL = NULL;       /* the state a SIGINT interrupts */
static const char *progname = PROGNAME; /* message prefix; NULL inside the REPL, as lua.c */

/*
** {==================================================================
** Signals, messages and protected calls (as lua.c)
** ===================================================================
*/

static void setsignal(int sig, void (*handler)(int)) {
  struct sigaction sa;
  sa.sa_handler = handler;
  sa.sa_flags = 0;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
}

/* Hook installed by laction: raises "interrupted!" in the running chunk. */
static void lstop(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted!");
}

/* SIGINT while a chunk runs: only a hook is async-signal-safe enough to stop Lua.  A
** second SIGINT before the hook runs (a long C call) kills the process. */
static void laction(int sig) {
  int flag = LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT;
  setsignal(sig, SIG_DFL);
  tir_request_interrupt(); /* a long tir.interpret runs in C: stop it too */
  lua_sethook(globalL, lstop, flag, 1);
}

static void l_message(const char *pname, const char *msg) {
  fflush(stdout); /* the script's output comes before the message */
  if (pname != NULL) fprintf(stderr, "%s: ", pname);
  fprintf(stderr, "%s\n", msg);
  fflush(stderr);
}

/* Prints and pops the error message on top when status is not LUA_OK. */
static int report(lua_State *L, int status) {
  if (status != LUA_OK) {
    char buf[64];
    const char *msg = lua_tostring(L, -1);
    if (msg == NULL) { /* docall renders objects; this one came from elsewhere */
      snprintf(buf, sizeof buf, "(error object is a %s value)", luaL_typename(L, -1));
      msg = buf;
    }
    l_message(progname, msg);
    lua_pop(L, 1);
  }
  return status;
}

/* tir.config.debug (--debug=N), 0 when unset. */
static lua_Integer debug_level(lua_State *L) {
  lua_Integer d = 0;
  if (lua_getglobal(L, "tir") == LUA_TTABLE && lua_getfield(L, -1, "config") == LUA_TTABLE) {
    lua_getfield(L, -1, "debug");
    d = lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  lua_settop(L, 1);
  return d;
}

/* Message handler: tir.Error and other objects with __tostring print as themselves (with
** --debug=1 or more also the Lua traceback: where in the script and in lib/tir it came from);
** strings get a traceback. */
static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    lua_settop(L, 1);
    int dbg = debug_level(L) >= 1;
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) {
      if (!dbg) return 1;
      msg = lua_tostring(L, -1);
    } else
      msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Calls the function below narg arguments with the message handler and the SIGINT hook. */
static int docall(lua_State *L, int narg, int nres) {
  int status;
  int base = lua_gettop(L) - narg; /* function index */
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  globalL = L;
  setsignal(SIGINT, laction);
  status = lua_pcall(L, narg, nres, base);
  setsignal(SIGINT, SIG_DFL);
  lua_remove(L, base);
  return status;
}

static int dochunk(lua_State *L, int status) {
  if (status == LUA_OK) status = docall(L, 0, 0);
  return report(L, status);
}

/* name NULL: stdin. */
static int dofile(lua_State *L, const char *name) {
  return dochunk(L, luaL_loadfile(L, name));
}

static int dostring(lua_State *L, const char *s, const char *name) {
  return dochunk(L, luaL_loadbuffer(L, s, strlen(s), name));
}

/* }================================================================== */

/*
** {==================================================================
** Command line
** ===================================================================
*/

#define has_error 1 /* bad option */
#define has_i 2     /* -i */
#define has_v 4     /* -v */
#define has_e 8     /* -e */
#define has_E 16    /* -E */
#define has_h 32    /* -h, --help */

/* Long options "--name=value" setting tir.config.name; dump is a string, the others
** non-negative integers. */
static const char *const config_opts[] = {"dump", "device", "debug", NULL};

/* Index in config_opts of a "--name=..." option, or -1. */
static int config_index(const char *opt) {
  int i;
  if (opt[0] != '-' || opt[1] != '-') return -1;
  for (i = 0; config_opts[i] != NULL; i++) {
    size_t n = strlen(config_opts[i]);
    if (strncmp(opt + 2, config_opts[i], n) == 0 && opt[2 + n] == '=') return i;
  }
  return -1;
}

static const char *config_value(const char *opt) {
  return strchr(opt, '=') + 1;
}

static int config_valid(int i, const char *v) {
  char *end;
  long n;
  if (i == 0) return strcmp(v, "ir") == 0 || strcmp(v, "cuda") == 0 || strcmp(v, "ptx") == 0;
  if (!isdigit((unsigned char)v[0])) return 0;
  errno = 0;
  n = strtol(v, &end, 10);
  return *end == '\0' && errno == 0 && n <= INT_MAX;
}

static void print_usage(FILE *f, const char *badoption) {
  if (badoption != NULL) {
    if (config_index(badoption) >= 0)
      fprintf(f, "%s: bad value in option '%s'\n", PROGNAME, badoption);
    else if (strcmp(badoption, "--cache-info") == 0 || strcmp(badoption, "--cache-clear") == 0)
      fprintf(f, "%s: '%s' stands alone: run 'tirlua %s' without other options or arguments\n", PROGNAME, badoption,
              badoption);
    else if ((badoption[1] == 'e' || badoption[1] == 'l') && badoption[2] == '\0')
      fprintf(f, "%s: '%s' needs argument\n", PROGNAME, badoption);
    else
      fprintf(f, "%s: unrecognized option '%s'\n", PROGNAME, badoption);
  }
  fprintf(f,
          "usage: %s [options] [script [args]]\n"
          "Available options are:\n"
          "  -e stat   execute string 'stat'\n"
          "  -i        enter interactive mode after executing 'script'\n"
          "  -l mod    require library 'mod' into global 'mod'\n"
          "  -l g=mod  require library 'mod' into global 'g'\n"
          "  -v        show version information\n"
          "  -E        ignore environment variables (" INIT_VAR ", TIRLUA_PATH, LUA_PATH...)\n"
          "  -W        turn warnings on\n"
          "  -h        show this help (also --help)\n"
          "  --dump=ir|cuda|ptx  set tir.config.dump\n"
          "  --device=N          set tir.config.device: the CUDA device tir.device(\"cuda\") means\n"
          "  --cache-info        print the kernel cache's directory and size, then exit\n"
          "  --cache-clear       remove every kernel cache entry, then exit\n"
          "  --debug=N           set tir.config.debug: 1 a line per build on stderr (kernels, grid,\n"
          "                      block, shared memory, cache) and the Lua traceback of a failing\n"
          "                      script; 2 also the IR after each pass (as --dump=ir)\n"
          "  --        stop handling options\n"
          "  -         stop handling options and execute stdin\n"
          "tir.config options apply after " INIT_VAR " and before -e, -l and the script.\n",
          PROGNAME);
  fflush(f);
}

static void print_version(void) {
  printf("%s %s (Lua %s)\n", PROGNAME, TIRLUA_VERSION, LUA_MM);
  fflush(stdout);
}

/* Checks the options (lua.c's collectargs).  *first: index of the script, argc when there
** is none, or of the bad option when the result is has_error. */
static int collectargs(int argc, char **argv, int *first) {
  int args = 0, i;
  for (i = 1; i < argc; i++) {
    *first = i;
    if (argv[i][0] != '-') return args; /* the script */
    switch (argv[i][1]) {
      case '-':
        if (argv[i][2] == '\0') { /* "--" */
          *first = i + 1;
          return args;
        }
        if (strcmp(argv[i], "--help") == 0)
          args |= has_h;
        else if (config_index(argv[i]) < 0 ||
                 !config_valid(config_index(argv[i]), config_value(argv[i])))
          return has_error;
        break;
      case '\0': /* "-": stdin is the script */
        return args;
      case 'h':
      case 'E':
      case 'i':
      case 'v':
      case 'W': { /* flags: nothing may follow the letter */
        static const char letters[] = "hEivW";
        static const int bits[] = {has_h, has_E, has_i, has_v, 0};
        if (argv[i][2] != '\0') return has_error;
        args |= bits[strchr(letters, argv[i][1]) - letters];
        break;
      }
      case 'e':
        args |= has_e; /* FALLTHROUGH */
      case 'l': /* both need an argument */
        if (argv[i][2] == '\0') {
          i++;
          if (i >= argc || argv[i][0] == '-') return has_error;
        }
        break;
      default:
        return has_error;
    }
  }
  *first = argc;
  return args;
}

/* Global `arg`: the script at 0, interpreter and options at negative indices, script
** arguments at 1..n (lua.c). */
static void createargtable(lua_State *L, char **argv, int argc, int script) {
  int i;
  if (script == argc) script = 0; /* no script: the interpreter is arg[0] */
  lua_createtable(L, argc - (script + 1), script + 1);
  for (i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

/* Sets tir.config fields (creating the table) from the long options in argv[1..n-1];
** without such options tir is left alone. */
static void apply_config(lua_State *L, char **argv, int n) {
  int i, k;
  for (i = 1; i < n; i++)
    if (config_index(argv[i]) >= 0) break;
  if (i == n) return;
  if (lua_getglobal(L, "tir") != LUA_TTABLE) luaL_error(L, "global 'tir' is not a table");
  if (lua_getfield(L, -1, "config") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "config");
  }
  for (i = 1; i < n; i++) {
    if ((k = config_index(argv[i])) < 0) continue;
    if (k == 0)
      lua_pushstring(L, config_value(argv[i]));
    else
      lua_pushinteger(L, strtol(config_value(argv[i]), NULL, 10));
    lua_setfield(L, -2, config_opts[k]);
  }
  lua_pop(L, 2);
}

/* -l mod: global mod = require "mod"; -l g=mod: global g = require "mod". */
static int dolibrary(lua_State *L, const char *spec) {
  const char *eq = strchr(spec, '=');
  int status;
  lua_getglobal(L, "require");
  lua_pushstring(L, eq != NULL ? eq + 1 : spec);
  status = docall(L, 1, 1);
  if (status == LUA_OK) {
    lua_pushglobaltable(L);
    lua_pushlstring(L, spec, eq != NULL ? (size_t)(eq - spec) : strlen(spec));
    lua_pushvalue(L, -3);
    lua_settable(L, -3);
    lua_pop(L, 2); /* globals, module */
  }
  return report(L, status);
}

/* Runs -e and -l in order and turns warnings on for -W; 0 when one failed. */
static int runargs(lua_State *L, char **argv, int n) {
  int i;
  for (i = 1; i < n; i++) {
    int option = argv[i][1];
    switch (option) {
      case 'e':
      case 'l': {
        const char *extra = argv[i] + 2;
        int status;
        if (*extra == '\0') extra = argv[++i];
        status = option == 'e' ? dostring(L, extra, "=(command line)") : dolibrary(L, extra);
        if (status != LUA_OK) return 0;
        break;
      }
      case 'W':
        lua_warning(L, "@on", 0);
        break;
    }
  }
  return 1;
}

/* Pushes arg[1..n] (the script's `...`); returns n. */
static int pushargs(lua_State *L) {
  int i, n;
  if (lua_getglobal(L, "arg") != LUA_TTABLE) luaL_error(L, "'arg' is not a table");
  n = (int)luaL_len(L, -1);
  luaL_checkstack(L, n + 3, "too many arguments to script");
  for (i = 1; i <= n; i++) lua_rawgeti(L, -i, i);
  lua_remove(L, -i);
  return n;
}

static int handle_script(lua_State *L, char **argv) {
  int status;
  const char *fname = argv[0];
  if (strcmp(fname, "-") == 0 && strcmp(argv[-1], "--") != 0) fname = NULL; /* stdin */
  status = luaL_loadfile(L, fname); /* skips a #! line */
  if (status == LUA_OK) status = docall(L, pushargs(L), 0);
  return report(L, status);
}

/* TIRLUA_INIT: a chunk, or @file. */
static int handle_init(lua_State *L) {
  const char *init = getenv(INIT_VAR);
  if (init == NULL) return LUA_OK;
  if (init[0] == '@') return dofile(L, init + 1);
  return dostring(L, init, "=" INIT_VAR);
}

/* }================================================================== */

/*
** {==================================================================
** Line input: readline or libedit via dlopen on a terminal, getline otherwise
** ===================================================================
*/

typedef char *(*readline_fn)(const char *);
typedef void (*add_history_fn)(const char *);
typedef int (*history_file_fn)(const char *);
typedef void (*stifle_fn)(int);

static struct {
  int interactive;        /* stdin is a terminal: prompts, banner, history file */
  readline_fn readline;   /* NULL: getline */
  add_history_fn add_history;
  history_file_fn write_history;
  char *line;             /* last line read (malloc'd by readline or getline) */
  size_t cap;             /* getline's size of line */
  char histfile[PATH_MAX]; /* "" when there is no $HOME or no read/write_history */
} in;

/* TAB completion: readline calls complete_names(text) through rl_completion_matches, and the
** candidates come from Lua, require("tir.repl").complete(word) (names, fields, methods). */
typedef char *(*rl_compentry_fn)(const char *, int);
typedef char **(*rl_completion_fn)(const char *, int, int);
typedef char **(*rl_completion_matches_fn)(const char *, rl_compentry_fn);

static lua_State *complete_L;                       /* the REPL's state, while it reads a line */
static rl_completion_matches_fn rl_completion_matches_p;
static int *rl_completion_append_p; /* readline resets it to ' ' before each completion */
static int *rl_attempted_over_p;    /* set: no file-name completion when no Lua name matches */
static char **complete_list;                         /* candidates of the current word */
static int complete_n, complete_next;

static void complete_free(void) {
  for (int i = 0; i < complete_n; i++) free(complete_list[i]);
  free(complete_list);
  complete_list = NULL;
  complete_n = complete_next = 0;
}

/* Lua side of the completion, protected: tir.repl.complete(text) -> list of strings. */
static int complete_lua(lua_State *L) {
  const char *text = lua_touserdata(L, 1);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "tir.repl");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "complete");
  lua_pushstring(L, text);
  lua_call(L, 1, 1);
  lua_Integer n = luaL_len(L, -1);
  complete_list = calloc((size_t)(n > 0 ? n : 1), sizeof(char *));
  for (lua_Integer i = 1; i <= n && complete_list; i++) {
    lua_geti(L, -1, i);
    const char *c = lua_tostring(L, -1);
    if (c) complete_list[complete_n++] = strdup(c);
    lua_pop(L, 1);
  }
  return 0;
}

static char *complete_names(const char *text, int state) {
  if (state == 0) {
    complete_free();
    if (complete_L) {
      int top = lua_gettop(complete_L);
      lua_pushcfunction(complete_L, complete_lua);
      lua_pushlightuserdata(complete_L, (void *)text);
      if (lua_pcall(complete_L, 1, 0, 0) != LUA_OK) complete_free(); /* no candidates, no noise */
      lua_settop(complete_L, top);
    }
  }
  return complete_next < complete_n ? strdup(complete_list[complete_next++]) : NULL;
}

static char **attempt_completion(const char *text, int start, int end) {
  (void)start;
  (void)end;
  if (rl_completion_append_p) *rl_completion_append_p = '\0'; /* tir.te.<TAB> goes on with a name */
  if (rl_attempted_over_p) *rl_attempted_over_p = 1; /* x.<TAB> must not offer x.png from the directory */
  return rl_completion_matches_p ? rl_completion_matches_p(text, complete_names) : NULL;
}

/* Installs the completion hooks when the line editor has them (readline; libedit's readline
** interface too). */
static void completion_open(void *lib) {
  rl_completion_fn *attempted = (rl_completion_fn *)dlsym(lib, "rl_attempted_completion_function");
  const char **breaks = (const char **)dlsym(lib, "rl_completer_word_break_characters");
  rl_completion_append_p = (int *)dlsym(lib, "rl_completion_append_character");
  rl_completion_matches_p = (rl_completion_matches_fn)dlsym(lib, "rl_completion_matches");
  rl_attempted_over_p = (int *)dlsym(lib, "rl_attempted_completion_over");
  if (attempted == NULL || rl_completion_matches_p == NULL) return;
  *attempted = attempt_completion;
  /* '.' and ':' are part of a word: tir.te.pl<TAB>, sch:spl<TAB> */
  if (breaks) *breaks = " \t\n\"\\'`@$><=;|&{(,+-*/%^~[]#";
}

/* Loads a line editor; it stays loaded until exit (it keeps terminal state and
** history). */
static void input_open(void) {
  static const char *const libs[] = {"libreadline.so.8", "libreadline.so", "libedit.so.2", NULL};
  void *lib = NULL;
  history_file_fn read_history;
  stifle_fn stifle;
  const char **rlname, *home = getenv("HOME");
  int i;
  in.interactive = isatty(STDIN_FILENO);
  if (!in.interactive) return;
  for (i = 0; libs[i] != NULL && lib == NULL; i++) lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) return;
  if ((in.readline = (readline_fn)dlsym(lib, "readline")) == NULL) {
    dlclose(lib);
    return;
  }
  if ((rlname = (const char **)dlsym(lib, "rl_readline_name")) != NULL)
    *rlname = PROGNAME; /* for $if tirlua in ~/.inputrc */
  in.add_history = (add_history_fn)dlsym(lib, "add_history");
  completion_open(lib);
  read_history = (history_file_fn)dlsym(lib, "read_history");
  in.write_history = (history_file_fn)dlsym(lib, "write_history");
  if ((stifle = (stifle_fn)dlsym(lib, "stifle_history")) != NULL) stifle(HISTORY_MAX);
  if (home == NULL || read_history == NULL || in.write_history == NULL ||
      snprintf(in.histfile, sizeof in.histfile, "%s/%s", home, HISTORY_FILE) >=
          (int)sizeof in.histfile)
    in.histfile[0] = '\0';
  else
    read_history(in.histfile);
}

static void input_close(void) {
  if (in.histfile[0] != '\0') in.write_history(in.histfile);
  complete_free();
  free(in.line);
  in.line = NULL;
  in.cap = 0;
}

/* Next line without its newline, or NULL at end of input. */
static const char *input_read(const char *prompt) {
  ssize_t n;
  fflush(stdout);
  if (in.readline != NULL) {
    free(in.line);
    return in.line = in.readline(prompt);
  }
  if (in.interactive) {
    fputs(prompt, stdout);
    fflush(stdout);
  }
  if ((n = getline(&in.line, &in.cap, stdin)) < 0) return NULL;
  if (n > 0 && in.line[n - 1] == '\n') in.line[n - 1] = '\0';
  return in.line;
}

static void input_save(const char *line) {
  if (in.add_history != NULL && line[0] != '\0') in.add_history(line);
}

/* }================================================================== */

/*
** {==================================================================
** Read-Eval-Print Loop (lua.c's)
** ===================================================================
*/

#define EOFMARK "<eof>"
#define MARKLEN (sizeof(EOFMARK) - 1)

/* Pushes the prompt: tostring(_PROMPT or _PROMPT2) when set. */
static const char *push_prompt(lua_State *L, int firstline) {
  if (lua_getglobal(L, firstline ? "_PROMPT" : "_PROMPT2") == LUA_TNIL) {
    lua_pop(L, 1);
    return lua_pushstring(L, firstline ? PROMPT : PROMPT2);
  }
  luaL_tolstring(L, -1, NULL);
  lua_remove(L, -2);
  return lua_tostring(L, -1);
}

/* Whether the syntax error on top is at <eof>, so more lines may complete the chunk. */
static int incomplete(lua_State *L, int status) {
  size_t lmsg;
  const char *msg;
  if (status != LUA_ERRSYNTAX) return 0;
  msg = lua_tolstring(L, -1, &lmsg);
  return lmsg >= MARKLEN && strcmp(msg + lmsg - MARKLEN, EOFMARK) == 0;
}

/* Reads a line and pushes it ('=' at the start of a first line means return). */
static int pushline(lua_State *L, int firstline) {
  const char *line = input_read(push_prompt(L, firstline));
  lua_pop(L, 1); /* prompt */
  if (line == NULL) return 0;
  if (firstline && line[0] == '=')
    lua_pushfstring(L, "return %s", line + 1);
  else
    lua_pushstring(L, line);
  return 1;
}

/* Compiles "return <line>;" (so expressions print); on success it replaces the line. */
static int addreturn(lua_State *L) {
  const char *line = lua_tostring(L, -1);
  const char *retline = lua_pushfstring(L, "return %s;", line);
  int status = luaL_loadbuffer(L, retline, strlen(retline), "=stdin");
  if (status == LUA_OK) {
    lua_remove(L, -2);
    input_save(line);
  } else
    lua_pop(L, 2);
  return status;
}

/* Locals end with their line; say so (Lua 5.5's REPL does the same). */
static void checklocal(const char *line) {
  line += strspn(line, " \t");
  if (in.interactive && strncmp(line, "local", 5) == 0 && (line[5] == ' ' || line[5] == '\t'))
    l_message(NULL, "warning: locals do not survive across lines in interactive mode");
}

/* Compiles the line as a statement, adding lines while the chunk is incomplete. */
static int multiline(lua_State *L) {
  for (;;) {
    size_t len;
    const char *line = lua_tolstring(L, 1, &len);
    int status = luaL_loadbuffer(L, line, len, "=stdin");
    if (!incomplete(L, status) || !pushline(L, 0)) {
      input_save(line);
      return status; /* function or message on top */
    }
    lua_remove(L, -2); /* the <eof> message */
    lua_pushliteral(L, "\n");
    lua_insert(L, -2);
    lua_concat(L, 3);
  }
}

/* Leaves a compiled chunk (LUA_OK) or a message on the stack; -1 at end of input. */
static int loadline(lua_State *L) {
  int status;
  lua_settop(L, 0);
  if (!pushline(L, 1)) return -1;
  if ((status = addreturn(L)) != LUA_OK) {
    checklocal(lua_tostring(L, 1));
    status = multiline(L);
  }
  lua_remove(L, 1); /* the line */
  return status;
}

/* Prints the results on the stack with the global print (so __tostring applies). */
static void l_print(lua_State *L) {
  int n = lua_gettop(L);
  if (n > 0) {
    luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
    lua_getglobal(L, "print");
    lua_insert(L, 1);
    if (lua_pcall(L, n, 0, 0) != LUA_OK)
      l_message(progname,
                lua_pushfstring(L, "error calling 'print' (%s)", luaL_tolstring(L, -1, NULL)));
  }
}

static void doREPL(lua_State *L) {
  int status;
  const char *oldprogname = progname;
  progname = NULL;
  complete_L = L;
  input_open();
  if (in.interactive)
    printf("%s %s -- TensorIR for CUDA in Lua (Lua %s); tir is loaded\n", PROGNAME,
           TIRLUA_VERSION, LUA_MM);
  while ((status = loadline(L)) != -1) {
    if (status == LUA_OK) status = docall(L, 0, LUA_MULTRET);
    if (status == LUA_OK)
      l_print(L);
    else
      report(L, status);
  }
  lua_settop(L, 0);
  if (in.interactive) fputs("\n", stdout); /* the shell's prompt on its own line */
  fflush(stdout);
  input_close();
  complete_L = NULL;
  progname = oldprogname;
}

/* }================================================================== */

/* Everything runs here, under lua_pcall. */
static int pmain(lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = (char **)lua_touserdata(L, 2);
  int script = argc;
  int args = collectargs(argc, argv, &script);
  int optlim = script; /* first argument that is not an option */
  luaL_checkversion(L);
  if (args == has_error) {
    print_usage(stderr, argv[script]);
    return 0;
  }
  if (args & has_h) {
    print_usage(stdout, NULL);
    lua_pushboolean(L, 1);
    return 1;
  }
  if (args & has_v) print_version();
  if (args & has_E) { /* as lua.c: the package library then ignores LUA_PATH etc. */
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  }
  luaL_openlibs(L);
  if (tirlua_openlibs(L) != 0) {
    report(L, LUA_ERRRUN);
    return 0;
  }
  /* help(x): tir.help as a global, as in Python's REPL */
  if (lua_getglobal(L, "help") == LUA_TNIL && lua_getglobal(L, "tir") == LUA_TTABLE) {
    lua_getfield(L, -1, "help");
    lua_setglobal(L, "help");
  }
  lua_settop(L, 0);
  createargtable(L, argv, argc, script);
  lua_gc(L, LUA_GCRESTART);
  lua_gc(L, LUA_GCGEN, 0, 0);
  if (!(args & has_E) && handle_init(L) != LUA_OK) return 0;
  apply_config(L, argv, optlim);
  if (!runargs(L, argv, optlim)) return 0;
  if (script < argc && handle_script(L, argv + script) != LUA_OK) return 0;
  if (args & has_i)
    doREPL(L);
  else if (script == argc && !(args & (has_e | has_v))) { /* no script, nothing to do */
    if (isatty(STDIN_FILENO))
      doREPL(L);
    else if (dofile(L, NULL) != LUA_OK) /* stdin as a chunk, like lua - */
      return 0;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* tirlua --cache-info / --cache-clear: the kernel cache's commands (they stand alone). */
static int cache_command(const char *cmd) {
  char dir[PATH_MAX];
  int on = tir_kcache_dir(dir, sizeof dir);
  if (on < 0) {
    fprintf(stderr, "%s: no kernel cache directory (set TIRLUA_CACHE_DIR or HOME)\n", PROGNAME);
    return EXIT_FAILURE;
  }
  if (strcmp(cmd, "--cache-info") == 0) {
    long entries;
    long long bytes;
    if (tir_kcache_info(&entries, &bytes) != 0) {
      fprintf(stderr, "%s: cannot read the kernel cache directory '%s'\n", PROGNAME, dir);
      return EXIT_FAILURE;
    }
    printf("kernel cache: %s\n  %s\n  %ld entries, %lld bytes (limit %lld MiB, TIRLUA_CACHE_MAX_MB)\n", dir,
           on ? "enabled" : "disabled (TIRLUA_CACHE)", entries, bytes, tir_kcache_limit() / (1024 * 1024));
    return EXIT_SUCCESS;
  }
  long n = tir_kcache_clear();
  if (n < 0) {
    fprintf(stderr, "%s: cannot read the kernel cache directory '%s'\n", PROGNAME, dir);
    return EXIT_FAILURE;
  }
  printf("kernel cache: %s: removed %ld files\n", dir, n);
  return EXIT_SUCCESS;
}

int main(int argc, char **argv) {
  static char *noargs[] = {PROGNAME, NULL};
  lua_State *L;
  int status, result;
  if (argc < 1) { /* no program name (execve with an empty argv) */
    argc = 1;
    argv = noargs;
  }
  if (argc == 2 && (strcmp(argv[1], "--cache-info") == 0 || strcmp(argv[1], "--cache-clear") == 0))
    return cache_command(argv[1]);
  if ((L = luaL_newstate()) == NULL) {
    l_message(PROGNAME, "cannot create state: not enough memory");
    return EXIT_FAILURE;
  }
  lua_gc(L, LUA_GCSTOP); /* no collections while building the state */
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  status = lua_pcall(L, 2, 1, 0);
  result = lua_toboolean(L, -1);
  progname = PROGNAME; /* an error may have left the REPL early */
  report(L, status);
  lua_close(L);
  return (result && status == LUA_OK) ? EXIT_SUCCESS : EXIT_FAILURE;
}
