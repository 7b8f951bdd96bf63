"""The words and LaTeX commands the answer reader knows, and what each one does.

An answer is LLM text, and the grader is a reward: every command and word in a
box is either known here or refused. :mod:`flexmg.envs.math.reading` uses these
tables; nothing else decides what a word means.

* Commands are math (``\\frac``, ``\\sqrt``, ``\\cup``), spacing and sizing
  (``\\quad``, ``\\left``), text wrappers (``\\text``), or refused: hedges
  (``\\approx``), what hides or strikes a value (``\\cancel``, ``\\phantom``,
  ``\\color``) and macros (``\\def``). A command in none of these sets is
  unknown, and refused too.
* Words in a box are units (``cm``, ``dollars``, ``apples``: allowed with the
  ``units="strip"`` setting), scale words (``thousand``), percent words, list
  joins (``and``, ``or``) or hedges (``maybe``, ``not``, ``approximately``,
  ``is``): the last are never credited.

Example:
    >>> command_kind("frac"), command_kind("approx"), command_kind("color"), command_kind("zzz")
    ('math', 'hedge', 'hidden', 'unknown')
    >>> word_kind("Thousand"), word_kind("maybe"), word_kind("apples"), word_kind("or")
    ('scale', 'hedge', 'unit', 'join')
"""

from __future__ import annotations

from fractions import Fraction

# --------------------------------------------------------------------- commands
_MATH_COMMANDS = """
frac dfrac tfrac cfrac sqrt binom dbinom tbinom choose over
cdot times div ast star circ bullet pm mp setminus backslash cup cap bigcup bigcap
le leq leqslant ge geq geqslant lt gt ne neq in notin ni subset subseteq supset supseteq
to rightarrow mapsto infty emptyset varnothing
equiv pmod bmod mod mid parallel perp angle measuredangle triangle square
prime degree
sin cos tan cot sec csc arcsin arccos arctan arccot arcsec arccsc sinh cosh tanh coth
log ln lg exp lim sum prod int iint iiint oint max min sup inf gcd lcm det arg deg dim ker
operatorname mathbb mathcal mathbf boldsymbol bm mathit mathsf mathscr mathfrak
alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi
pi varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega
Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega ell hbar imath jmath
hat widehat bar overline underline vec overrightarrow overleftarrow tilde widetilde dot ddot
check breve acute grave mathring
lfloor rfloor lceil rceil langle rangle lvert rvert vert lVert rVert Vert
ldots dots cdots dotsc dotsb dotsm vdots ddots
begin end hline
partial nabla forall exists
""".split()
_SPACING_COMMANDS = """
left right bigl bigr Bigl Bigr biggl biggr Biggl Biggr big Big bigg Bigg middle
quad qquad displaystyle textstyle scriptstyle limits nolimits mathstrut strut
hspace enspace thinspace negthinspace medspace thickspace
""".split()
_TEXT_COMMANDS = """
text textbf textit textrm textnormal textsf texttt textup textmd mbox hbox mathrm emph
""".split()
# Commands that hedge or state something other than one value.
_HEDGE_COMMANDS = """
approx approxeq thickapprox sim simeq thicksim backsim cong doteq propto asymp
lesssim gtrsim lessapprox gtrapprox lor vee land wedge neg lnot implies impliedby
Rightarrow Leftarrow Leftrightarrow iff Longrightarrow longrightarrow therefore because
""".split()
# Commands that strike out, hide, recolour or stack a second value.
_HIDDEN_COMMANDS = """
cancel bcancel xcancel cancelto sout st xout not phantom hphantom vphantom smash
color textcolor colorbox fcolorbox pagecolor llap rlap clap mathllap mathrlap mathclap
underset overset stackrel substack atop underbrace overbrace tag notag label
raisebox scalebox resizebox reflectbox rotatebox tiny scriptsize footnotesize small
large Large LARGE huge Huge boxed fbox framebox
""".split()
# Commands that define or load other commands (their meaning is not the text's).
_MACRO_COMMANDS = """
def gdef edef xdef let futurelet newcommand renewcommand providecommand
DeclareMathOperator newenvironment renewenvironment require catcode csname endcsname
expandafter input include href url write immediate special char mathchar
""".split()

_COMMAND_KINDS: dict[str, str] = {}
for _kind, _names in (
    ("math", _MATH_COMMANDS),
    ("spacing", _SPACING_COMMANDS),
    ("text", _TEXT_COMMANDS),
    ("hedge", _HEDGE_COMMANDS),
    ("hidden", _HIDDEN_COMMANDS),
    ("macro", _MACRO_COMMANDS),
):
    for _name in _names:
        _COMMAND_KINDS[_name] = _kind

# Environments a matrix or a column vector may be written in (``vmatrix`` is a determinant).
MATRIX_ENVIRONMENTS = frozenset("pmatrix bmatrix Bmatrix matrix smallmatrix array".split())


# Names an ``\\operatorname{...}`` may carry in an answer (anything else is refused).
OPERATOR_NAMES = frozenset(
    """
    lcm gcd sgn sign rank tr trace re im arg mod proj span diag ord deg cis sech csch arcsec
    arccsc arccot arsinh arcosh artanh arcsinh arccosh arctanh erf li si ci det dim ker id var
    cov lg ln log exp sin cos tan cot sec csc
    """.split()
)


def command_kind(name: str) -> str:
    """``math``, ``spacing``, ``text``, ``hedge``, ``hidden``, ``macro`` or ``unknown``.

    ``name`` is the command without its backslash.
    """
    return _COMMAND_KINDS.get(name, "unknown")


# ------------------------------------------------------------------------ words
SCALE_WORDS: dict[str, Fraction] = {
    "hundred": Fraction(10**2),
    "thousand": Fraction(10**3),
    "million": Fraction(10**6),
    "billion": Fraction(10**9),
    "trillion": Fraction(10**12),
}
PERCENT_WORDS = frozenset({"percent", "percentage", "percentages", "pct", "percents"})
JOIN_WORDS = frozenset({"and", "or"})
# Words that hedge, negate, compare, offer alternatives or talk about the answer.
_HEDGE_WORDS = frozenset(
    """
    approximately approximate approx about around roughly nearly almost circa ca
    maybe perhaps possibly possible probably probable likely unlikely guess guessed estimate
    estimated assume assuming assumed suppose supposedly presumably
    not no nope never none neither nor either except unless if but yet though although
    wrong incorrect false true correct right invalid valid unsure uncertain sure certain
    is isn are aren was wasn were be being been am equal equals equals same
    than more less least most over under above below between within at plus minus
    up down to from else otherwise alternatively alternative also another other others
    could might may can cannot should would will must shall
    answer answers final option options choice choices choose pick any some every each
    wait hmm actually think believe seems seem think guessing depends depending
    undefined indeterminate unknown undetermined dne exist exists nan infinite
    """.split()
)
# Words that are mathematics, never units (``sin`` in ``\\sin``-less writing, ``pi``).
MATH_WORDS = frozenset(
    """
    pi sqrt sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln lg exp
    lim max min gcd lcm mod det deg inf infty infinity dx dy dt
    """.split()
)
# Units shorter than three letters (longer words count as units unless known otherwise).
SHORT_UNITS = frozenset(
    """
    cm mm km m2 kg mg ml ft in yd mi hr hrs h s sq lb oz am pm mph kph m g l
    th st nd rd
    """.split()
)
CURRENCY_PREFIXES = frozenset({"usd", "rs", "inr", "eur", "gbp", "cad", "aud", "rmb", "yuan"})


def word_kind(word: str) -> str:
    """``scale``, ``percent``, ``join``, ``hedge``, ``math`` or ``unit`` for one word.

    Case does not matter; a plural ``s`` of a scale word is dropped.
    """
    lower = word.lower()
    singular = lower[:-1] if lower.endswith("s") and lower[:-1] in SCALE_WORDS else lower
    if singular in SCALE_WORDS:
        return "scale"
    if lower in PERCENT_WORDS:
        return "percent"
    if lower in JOIN_WORDS:
        return "join"
    if lower in _HEDGE_WORDS:
        return "hedge"
    if lower in MATH_WORDS:
        return "math"
    return "unit"


def scale_of(word: str) -> Fraction:
    """The factor of a scale word (``thousands`` -> 1000).

    >>> scale_of("Millions")
    Fraction(1000000, 1)
    """
    lower = word.lower()
    return SCALE_WORDS.get(lower, SCALE_WORDS.get(lower[:-1], Fraction(1)))
