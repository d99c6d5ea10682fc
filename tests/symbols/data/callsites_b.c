/* The second unit of the call-site test program (callsites.c). */
volatile int far_sink;

int far_away(int x)
{
    far_sink = x;
    return far_sink * 2;
}
